-- Scheduled fires: one row per (flow, scheduled time), inserted by the geoflow serve
-- instance that claims the fire before running it, so that several instances over one
-- database run each fire exactly once. The row says what became of the fire; the latest
-- row of a flow is its last fire time, from which catchup counts the fires missed while
-- no instance was up.

CREATE TABLE geoflow_schedule_fires (
    flow          text        NOT NULL,
    scheduled_for timestamptz NOT NULL,
    claimed_by    text        NOT NULL,
    claimed_at    timestamptz NOT NULL DEFAULT now(),
    catchup       boolean     NOT NULL DEFAULT false,
    status        text        NOT NULL DEFAULT 'claimed'
                  CHECK (status IN ('claimed', 'queued', 'running', 'ran', 'skipped_overlap', 'cancelled', 'failed')),
    run_id        bigint      REFERENCES geoflow_runs (id) ON DELETE SET NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    error         text,
    PRIMARY KEY (flow, scheduled_for)
);

CREATE INDEX geoflow_runs_status_idx ON geoflow_runs (status, id DESC);
