ALTER TABLE geoflow_units DROP COLUMN features_filtered;
