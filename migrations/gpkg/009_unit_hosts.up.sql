-- What each unit's requests asked of each host, as JSON, and the process that executed
-- it last; a task's requests outside its units with the task (as in PostgreSQL's 013).
ALTER TABLE geoflow_units ADD COLUMN hosts TEXT NOT NULL DEFAULT '[]';
ALTER TABLE geoflow_units ADD COLUMN worker TEXT;
ALTER TABLE geoflow_run_tasks ADD COLUMN hosts TEXT NOT NULL DEFAULT '[]';
