-- Distributed runs (geoflow run --distributed): their units are River jobs that a pool of
-- geoflow worker processes executes. River's own tables come from River's migrations,
-- applied after these.
ALTER TABLE geoflow_runs ADD COLUMN distributed boolean NOT NULL DEFAULT false;

-- The pool's workers, as each one reports itself every few seconds: what geoflow workers
-- list and /metrics show, and what tells a rescued unit's previous worker alive or dead.
CREATE TABLE geoflow_workers (
    id            text PRIMARY KEY,      -- River's client id
    hostname      text NOT NULL,
    pid           integer NOT NULL,
    version       text NOT NULL DEFAULT '',
    concurrency   integer NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    seen_at       timestamptz NOT NULL DEFAULT now(),
    stopped_at    timestamptz,
    units_done    bigint NOT NULL DEFAULT 0,
    units_failed  bigint NOT NULL DEFAULT 0,
    units_snoozed bigint NOT NULL DEFAULT 0,
    in_flight     integer NOT NULL DEFAULT 0
);
