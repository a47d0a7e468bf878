DROP TABLE geoflow_absent;
