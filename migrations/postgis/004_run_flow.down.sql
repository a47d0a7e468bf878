ALTER TABLE geoflow_runs DROP COLUMN flow_text, DROP COLUMN flow_hash;
