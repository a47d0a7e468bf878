DROP TABLE IF EXISTS geoflow_units;
DROP TABLE IF EXISTS geoflow_run_tasks;
DROP TABLE IF EXISTS geoflow_runs;
