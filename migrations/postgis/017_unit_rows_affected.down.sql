ALTER TABLE geoflow_units DROP COLUMN IF EXISTS rows_affected;
