-- Runs, their tasks and their units: the bookkeeping that makes resume, reruns and the
-- dead-letter queue possible. A unit's state changes in the same transaction as its data.

CREATE TABLE geoflow_runs (
    id                bigserial PRIMARY KEY,
    flow              text        NOT NULL,
    flow_file         text,
    status            text        NOT NULL DEFAULT 'running'
                      CHECK (status IN ('pending', 'running', 'done', 'failed', 'interrupted')),
    trigger           text        NOT NULL DEFAULT 'manual',
    scheduled_for     timestamptz,
    started_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    area              geometry(Polygon, 4326),
    only_tasks        text[],
    units_total       bigint      NOT NULL DEFAULT 0,
    units_done        bigint      NOT NULL DEFAULT 0,
    units_dead        bigint      NOT NULL DEFAULT 0,
    features_inserted bigint      NOT NULL DEFAULT 0,
    features_skipped  bigint      NOT NULL DEFAULT 0,
    features_updated  bigint      NOT NULL DEFAULT 0,
    error             text
);
CREATE INDEX geoflow_runs_flow_idx ON geoflow_runs (flow, id DESC);

CREATE TABLE geoflow_run_tasks (
    run_id            bigint      NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task              text        NOT NULL,
    type              text        NOT NULL,
    state             text        NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'running', 'done', 'failed', 'upstream_failed', 'interrupted')),
    started_at        timestamptz,
    finished_at       timestamptz,
    units_total       bigint      NOT NULL DEFAULT 0,
    units_done        bigint      NOT NULL DEFAULT 0,
    units_dead        bigint      NOT NULL DEFAULT 0,
    features_inserted bigint      NOT NULL DEFAULT 0,
    features_skipped  bigint      NOT NULL DEFAULT 0,
    features_updated  bigint      NOT NULL DEFAULT 0,
    bytes             bigint      NOT NULL DEFAULT 0,
    error             text,
    PRIMARY KEY (run_id, task)
);

CREATE TABLE geoflow_units (
    run_id            bigint      NOT NULL,
    task              text        NOT NULL,
    key               text        NOT NULL,
    parent_key        text,
    bbox              geometry(Polygon, 4326),
    spec              jsonb,
    state             text        NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'running', 'done', 'failed', 'interrupted')),
    attempts          integer     NOT NULL DEFAULT 0,
    started_at        timestamptz,
    finished_at       timestamptz,
    features_inserted bigint      NOT NULL DEFAULT 0,
    features_skipped  bigint      NOT NULL DEFAULT 0,
    features_updated  bigint      NOT NULL DEFAULT 0,
    bytes             bigint      NOT NULL DEFAULT 0,
    error             text,
    PRIMARY KEY (run_id, task, key),
    FOREIGN KEY (run_id, task) REFERENCES geoflow_run_tasks (run_id, task) ON DELETE CASCADE
);
CREATE INDEX geoflow_units_open_idx ON geoflow_units (run_id, task) WHERE state <> 'done';
CREATE INDEX geoflow_units_bbox_idx ON geoflow_units USING gist (bbox);
