-- Features a unit's server counted beyond what it returned, summed by the task's
-- completeness check (as in PostgreSQL's 010).
ALTER TABLE geoflow_units ADD COLUMN features_short INTEGER NOT NULL DEFAULT 0;
