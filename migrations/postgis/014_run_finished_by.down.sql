ALTER TABLE geoflow_runs DROP COLUMN IF EXISTS adopted_at, DROP COLUMN IF EXISTS finished_by;
