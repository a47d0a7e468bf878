-- geoflow's own bookkeeping, as plain tables that are not listed in gpkg_contents, so
-- GeoPackage readers (QGIS, GDAL) show the feature and tile tables and leave these alone.
-- The same records as the PostGIS store keeps: runs, their tasks and units, dead letters
-- and schedule fires. Boxes are four lon/lat columns (min_x, min_y, max_x, max_y); times
-- are ISO 8601 UTC text with milliseconds, which sorts as time does; lists and histories
-- are JSON text.

CREATE TABLE geoflow_runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    flow              TEXT    NOT NULL,
    flow_file         TEXT,
    flow_text         TEXT,
    flow_hash         TEXT,
    status            TEXT    NOT NULL DEFAULT 'running'
                      CHECK (status IN ('pending', 'running', 'done', 'failed', 'interrupted')),
    trigger           TEXT    NOT NULL DEFAULT 'manual',
    scheduled_for     TEXT,
    started_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at       TEXT,
    area_min_x        REAL, area_min_y REAL, area_max_x REAL, area_max_y REAL,
    only_tasks        TEXT,
    units_total       INTEGER NOT NULL DEFAULT 0,
    units_done        INTEGER NOT NULL DEFAULT 0,
    units_dead        INTEGER NOT NULL DEFAULT 0,
    features_inserted INTEGER NOT NULL DEFAULT 0,
    features_skipped  INTEGER NOT NULL DEFAULT 0,
    features_updated  INTEGER NOT NULL DEFAULT 0,
    error             TEXT
);
CREATE INDEX geoflow_runs_flow_idx ON geoflow_runs (flow, id DESC);
CREATE INDEX geoflow_runs_status_idx ON geoflow_runs (status, id DESC);

CREATE TABLE geoflow_run_tasks (
    run_id            INTEGER NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task              TEXT    NOT NULL,
    type              TEXT    NOT NULL,
    state             TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'running', 'done', 'failed', 'upstream_failed', 'interrupted')),
    started_at        TEXT,
    finished_at       TEXT,
    units_total       INTEGER NOT NULL DEFAULT 0,
    units_done        INTEGER NOT NULL DEFAULT 0,
    units_dead        INTEGER NOT NULL DEFAULT 0,
    features_inserted INTEGER NOT NULL DEFAULT 0,
    features_skipped  INTEGER NOT NULL DEFAULT 0,
    features_updated  INTEGER NOT NULL DEFAULT 0,
    bytes             INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    PRIMARY KEY (run_id, task)
);

CREATE TABLE geoflow_units (
    run_id            INTEGER NOT NULL,
    task              TEXT    NOT NULL,
    key               TEXT    NOT NULL,
    parent_key        TEXT,
    min_x REAL, min_y REAL, max_x REAL, max_y REAL,
    spec              TEXT,
    state             TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'running', 'done', 'failed', 'interrupted')),
    attempts          INTEGER NOT NULL DEFAULT 0,
    started_at        TEXT,
    finished_at       TEXT,
    features_inserted INTEGER NOT NULL DEFAULT 0,
    features_skipped  INTEGER NOT NULL DEFAULT 0,
    features_updated  INTEGER NOT NULL DEFAULT 0,
    bytes             INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    PRIMARY KEY (run_id, task, key)
) WITHOUT ROWID;
CREATE INDEX geoflow_units_open_idx ON geoflow_units (run_id, task, state);

CREATE TABLE geoflow_dlq (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    flow             TEXT    NOT NULL,
    task             TEXT    NOT NULL,
    run_id           INTEGER NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    unit_key         TEXT    NOT NULL,
    min_x REAL, min_y REAL, max_x REAL, max_y REAL,
    request_method   TEXT,
    request_url      TEXT,
    request_body     TEXT,
    error_class      TEXT    NOT NULL,
    error            TEXT    NOT NULL,
    http_status      INTEGER,
    response_snippet TEXT,
    attempts         INTEGER NOT NULL DEFAULT 1,
    first_failed_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    last_failed_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    status           TEXT    NOT NULL DEFAULT 'open'
                     CHECK (status IN ('open', 'replayed', 'discarded')),
    replay_history   TEXT    NOT NULL DEFAULT '[]',
    UNIQUE (run_id, task, unit_key)
);
CREATE INDEX geoflow_dlq_flow_idx ON geoflow_dlq (flow, task);
CREATE INDEX geoflow_dlq_class_idx ON geoflow_dlq (error_class);
CREATE INDEX geoflow_dlq_status_idx ON geoflow_dlq (status, last_failed_at);

CREATE TABLE geoflow_schedule_fires (
    flow          TEXT    NOT NULL,
    scheduled_for TEXT    NOT NULL,
    claimed_by    TEXT    NOT NULL,
    claimed_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    catchup       INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL DEFAULT 'claimed'
                  CHECK (status IN ('claimed', 'queued', 'running', 'ran', 'skipped_overlap', 'cancelled', 'failed')),
    run_id        INTEGER REFERENCES geoflow_runs (id) ON DELETE SET NULL,
    updated_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    error         TEXT,
    PRIMARY KEY (flow, scheduled_for)
);

-- The run history is listed as the GeoPackage's one attribute table, so QGIS and GDAL
-- show it next to the layers. Listing one attribute table is also what keeps GDAL from
-- listing every unregistered table (the other bookkeeping tables) as a layer.
INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change)
VALUES ('geoflow_runs', 'attributes', 'geoflow_runs', 'geoflow run history: one row per run of a flow',
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
