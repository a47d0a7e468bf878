DROP TABLE geoflow_host_pace;
