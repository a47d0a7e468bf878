ALTER TABLE geoflow_units DROP COLUMN requests;
