-- What became of features besides inserted, skipped and updated, per unit and rolled up
-- per task and run: refused by the decoder (the unit is then dead-lettered as rejected),
-- and merged: skipped because a row with the same payload and another feature id is
-- stored (append mode keys rows on the payload, so such features are that row; the
-- completeness check counts them). geoflow_merged holds the ids merged in a run, so that
-- a feature seen by two overlapping tiles is counted once; a run that ends done drops
-- its rows.
ALTER TABLE geoflow_units ADD COLUMN features_rejected bigint NOT NULL DEFAULT 0,
    ADD COLUMN features_merged bigint NOT NULL DEFAULT 0;
ALTER TABLE geoflow_run_tasks ADD COLUMN features_rejected bigint NOT NULL DEFAULT 0,
    ADD COLUMN features_merged bigint NOT NULL DEFAULT 0;
ALTER TABLE geoflow_runs ADD COLUMN features_rejected bigint NOT NULL DEFAULT 0,
    ADD COLUMN features_merged bigint NOT NULL DEFAULT 0;
CREATE TABLE geoflow_merged (
    run_id     bigint NOT NULL REFERENCES geoflow_runs (id) ON DELETE CASCADE,
    task       text   NOT NULL,
    feature_id text   NOT NULL,
    PRIMARY KEY (run_id, task, feature_id)
);
