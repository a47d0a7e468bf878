-- Mirror mode and history. geoflow_seen holds, per unit of a run's task writing into a
-- mirror table, the keys of the features it wrote: a complete harvest deletes the rows
-- whose key no unit saw. geoflow_changes is the change log of keyed tables (mirror mode,
-- or history): what each run inserted, updated or deleted, with a deleted row's geometry
-- and properties when the table keeps no history of it. The run's task records how many
-- features its mirror deleted, the versions it closed, and what it decided about
-- deletions (applied, or withheld and why).
ALTER TABLE geoflow_run_tasks ADD COLUMN features_deleted bigint NOT NULL DEFAULT 0,
    ADD COLUMN versions_closed bigint NOT NULL DEFAULT 0,
    ADD COLUMN mirror_note text,
    -- Features a mirror's run saw and left as they were, each once however many tiles
    -- delivered it (features_skipped counts every delivery); NULL for other tables.
    ADD COLUMN features_unchanged bigint;
CREATE TABLE geoflow_seen (
    run_id bigint NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task   text   NOT NULL,
    unit   text   NOT NULL,
    keys   text[] NOT NULL,
    PRIMARY KEY (run_id, task, unit)
);
CREATE TABLE geoflow_changes (
    run_id       bigint NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task         text   NOT NULL,
    target       text   NOT NULL,
    gf_key       text   NOT NULL,
    feature_id   text,
    change       text   NOT NULL CHECK (change IN ('inserted', 'updated', 'deleted')),
    payload_hash bytea,
    geom         geometry,
    properties   jsonb,
    PRIMARY KEY (run_id, task, gf_key)
);
