ALTER TABLE geoflow_run_tasks DROP COLUMN hosts;
ALTER TABLE geoflow_units DROP COLUMN worker, DROP COLUMN hosts;
