DROP INDEX IF EXISTS geoflow_runs_status_idx;
DROP TABLE IF EXISTS geoflow_schedule_fires;
