-- The rows a flow's SQL step affected, as in PostgreSQL's 020: SQLite counts those of
-- INSERT, UPDATE, DELETE and REPLACE.
ALTER TABLE geoflow_units ADD COLUMN rows_affected INTEGER NOT NULL DEFAULT 0;
