ALTER TABLE geoflow_units DROP COLUMN features_rejected, DROP COLUMN features_merged;
