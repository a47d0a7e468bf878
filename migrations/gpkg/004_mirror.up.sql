-- Mirror mode and history, as in the PostGIS store (007_mirror). geoflow_seen holds, per
-- unit of a run's task writing into a mirror table, the keys of the features it wrote as
-- a JSON array of texts: a complete harvest deletes the rows whose key no unit saw.
-- geoflow_changes is the change log of keyed tables (mirror mode, or history): what each
-- run inserted, updated or deleted, with a deleted row's geometry (a GeoPackage geometry
-- blob, and its srs_id) and properties (a JSON object) when the table keeps no history of
-- it. The run's task records how many features its mirror deleted, the versions it
-- closed, and what it decided about deletions (applied, or withheld and why).
ALTER TABLE geoflow_run_tasks ADD COLUMN features_deleted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE geoflow_run_tasks ADD COLUMN versions_closed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE geoflow_run_tasks ADD COLUMN mirror_note TEXT;
-- Features a mirror's run saw and left as they were, each once however many tiles
-- delivered it (features_skipped counts every delivery); NULL for other tables.
ALTER TABLE geoflow_run_tasks ADD COLUMN features_unchanged INTEGER;
CREATE TABLE geoflow_seen (
    run_id INTEGER NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task   TEXT    NOT NULL,
    unit   TEXT    NOT NULL,
    keys   TEXT    NOT NULL,
    PRIMARY KEY (run_id, task, unit)
);
CREATE TABLE geoflow_changes (
    run_id       INTEGER NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task         TEXT    NOT NULL,
    target       TEXT    NOT NULL,
    gf_key       TEXT    NOT NULL,
    feature_id   TEXT,
    change       TEXT    NOT NULL CHECK (change IN ('inserted', 'updated', 'deleted')),
    payload_hash BLOB,
    geom         BLOB,
    srs_id       INTEGER,
    properties   TEXT,
    PRIMARY KEY (run_id, task, gf_key)
);
