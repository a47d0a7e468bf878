ALTER TABLE geoflow_units DROP COLUMN IF EXISTS features_overlap;
