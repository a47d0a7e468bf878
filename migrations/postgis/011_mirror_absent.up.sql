-- Where a mirror's source cannot be asked for a feature by id, a row the listing left out
-- is deleted only once it was absent from target.delete_after consecutive complete runs:
-- geoflow_absent counts them, per flow, task, table and key. A run that sees the row
-- again ends its streak; deleting the row forgets it.
CREATE TABLE geoflow_absent (
    flow     text   NOT NULL,
    task     text   NOT NULL,
    target   text   NOT NULL,
    gf_key   text   NOT NULL,
    runs     int    NOT NULL,
    last_run bigint NOT NULL,
    PRIMARY KEY (flow, task, target, gf_key)
);
