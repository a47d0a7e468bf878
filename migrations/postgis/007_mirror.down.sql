DROP TABLE geoflow_changes;
DROP TABLE geoflow_seen;
ALTER TABLE geoflow_run_tasks DROP COLUMN features_deleted, DROP COLUMN versions_closed, DROP COLUMN mirror_note, DROP COLUMN features_unchanged;
