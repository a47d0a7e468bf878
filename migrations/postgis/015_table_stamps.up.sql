-- A version per feature table, raised in the same transaction by every write of geoflow's
-- that changes the table's rows: a unit that inserted or updated features (with history,
-- closed versions), a mirror's deletions. The web map's ETags (store.StoredTable.Stamp)
-- read it instead of scanning the table, and see a change exactly when it commits.
-- target is schema.table, as geoflow_changes names tables.
CREATE TABLE geoflow_table_stamps (
    target  text   PRIMARY KEY,
    version bigint NOT NULL
);
