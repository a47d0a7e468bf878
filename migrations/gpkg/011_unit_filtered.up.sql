-- Features a unit's response held that the task's transform.where left out (as in
-- PostgreSQL's 016).
ALTER TABLE geoflow_units ADD COLUMN features_filtered INTEGER NOT NULL DEFAULT 0;
