DROP TABLE IF EXISTS geoflow_table_stamps;
