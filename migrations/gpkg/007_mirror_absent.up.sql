-- Absence streaks of a mirror's rows, where the source cannot be asked by id (as in
-- PostgreSQL's 011): a row is deleted once absent from target.delete_after consecutive
-- complete runs; a run that sees it again ends its streak.
CREATE TABLE geoflow_absent (
    flow     TEXT    NOT NULL,
    task     TEXT    NOT NULL,
    target   TEXT    NOT NULL,
    gf_key   TEXT    NOT NULL,
    runs     INTEGER NOT NULL,
    last_run INTEGER NOT NULL,
    PRIMARY KEY (flow, task, target, gf_key)
);
