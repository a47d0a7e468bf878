-- What each unit's requests asked of each host (requests, retries, 429s, waits, breaker
-- openings), one element per host and execution naming the process that sent them, and
-- the process that executed the unit last: a distributed run's figures are its workers',
-- summed from the units. A task's requests outside its units (planning, its finish's
-- checks) are kept with the task. Empty for what was recorded before.
ALTER TABLE geoflow_units ADD COLUMN hosts jsonb NOT NULL DEFAULT '[]', ADD COLUMN worker text;
ALTER TABLE geoflow_run_tasks ADD COLUMN hosts jsonb NOT NULL DEFAULT '[]';
