DROP TABLE geoflow_merged;
ALTER TABLE geoflow_runs DROP COLUMN features_rejected, DROP COLUMN features_merged;
ALTER TABLE geoflow_run_tasks DROP COLUMN features_rejected, DROP COLUMN features_merged;
ALTER TABLE geoflow_units DROP COLUMN features_rejected, DROP COLUMN features_merged;
