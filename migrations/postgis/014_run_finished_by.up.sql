-- Who follows a run to its end when it is not the process that started it (nor a person's
-- --resume): the pool's worker that adopted it once its starting process was gone
-- ('worker w2'), and when it did. NULL for every other run.
ALTER TABLE geoflow_runs ADD COLUMN finished_by text, ADD COLUMN adopted_at timestamptz;
