-- Features a unit's server counted beyond what it returned (a count from an estimate,
-- ids listed then deleted): the task's completeness check, which may run in another
-- process than the units (distributed runs), reads their sum.
ALTER TABLE geoflow_units ADD COLUMN features_short bigint NOT NULL DEFAULT 0;
