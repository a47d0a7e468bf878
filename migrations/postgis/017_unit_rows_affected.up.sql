-- The rows a flow's SQL step affected (its statements' INSERT, UPDATE, DELETE, MERGE and
-- CREATE TABLE ... AS counts, summed), recorded with the unit that ran it. Tasks and runs
-- sum it from their units when shown.
ALTER TABLE geoflow_units ADD COLUMN rows_affected bigint NOT NULL DEFAULT 0;
