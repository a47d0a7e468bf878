-- The dead-letter queue: one row per unit that failed for good, kept for a person to
-- triage (list, show, replay, discard). A later failure of the same unit updates its row.
-- Requests, messages and snippets are stored with their credentials redacted.

CREATE TABLE geoflow_dlq (
    id               bigserial   PRIMARY KEY,
    flow             text        NOT NULL,
    task             text        NOT NULL,
    run_id           bigint      NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    unit_key         text        NOT NULL,
    bbox             geometry(Polygon, 4326),
    request_method   text,
    request_url      text,
    request_body     text,
    error_class      text        NOT NULL,
    error            text        NOT NULL,
    http_status      integer,
    response_snippet text,
    attempts         integer     NOT NULL DEFAULT 1,
    first_failed_at  timestamptz NOT NULL DEFAULT now(),
    last_failed_at   timestamptz NOT NULL DEFAULT now(),
    status           text        NOT NULL DEFAULT 'open'
                     CHECK (status IN ('open', 'replayed', 'discarded')),
    replay_history   jsonb       NOT NULL DEFAULT '[]',
    UNIQUE (run_id, task, unit_key)
);
CREATE INDEX geoflow_dlq_flow_idx ON geoflow_dlq (flow, task);
CREATE INDEX geoflow_dlq_class_idx ON geoflow_dlq (error_class);
CREATE INDEX geoflow_dlq_status_idx ON geoflow_dlq (status, last_failed_at);
CREATE INDEX geoflow_dlq_bbox_idx ON geoflow_dlq USING gist (bbox);
