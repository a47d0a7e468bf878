DROP TABLE IF EXISTS geoflow_dlq;
