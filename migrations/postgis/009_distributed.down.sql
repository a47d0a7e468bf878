DROP TABLE IF EXISTS geoflow_workers;
ALTER TABLE geoflow_runs DROP COLUMN IF EXISTS distributed;
