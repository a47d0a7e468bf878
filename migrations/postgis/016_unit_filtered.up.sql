-- Features a unit's response held that the task's transform.where left out: returned by
-- the server (so counted by completeness checks) but not stored. Each is counted by one
-- unit only, however many tiles returned it, so the sum over a run's task is a count of
-- distinct features.
ALTER TABLE geoflow_units ADD COLUMN features_filtered bigint NOT NULL DEFAULT 0;
