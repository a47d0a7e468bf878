-- A run or a task whose harvest cannot be proved complete ends 'incomplete' (as in
-- PostgreSQL's 011). SQLite cannot alter a CHECK constraint, and rebuilding these tables
-- would cascade-delete their tasks, units and dead letters (foreign keys are on and cannot
-- be switched off inside the migration's transaction), so the constraint's text is edited
-- in place: SQLite's documented way to loosen a CHECK constraint, which existing rows
-- already satisfy. The throwaway table bumps the schema cookie, so that every connection
-- reads the new text; RESET makes this one read it at once.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, 'CHECK (status IN (''pending'', ''running'', ''done'', ''failed'', ''interrupted''))',
                          'CHECK (status IN (''pending'', ''running'', ''done'', ''incomplete'', ''failed'', ''interrupted''))')
 WHERE type = 'table' AND name = 'geoflow_runs';
UPDATE sqlite_master
   SET sql = replace(sql, 'CHECK (state IN (''pending'', ''running'', ''done'', ''failed'', ''upstream_failed'', ''interrupted''))',
                          'CHECK (state IN (''pending'', ''running'', ''done'', ''incomplete'', ''failed'', ''upstream_failed'', ''interrupted''))')
 WHERE type = 'table' AND name = 'geoflow_run_tasks';
CREATE TABLE geoflow_schema_cookie_bump (x INTEGER);
DROP TABLE geoflow_schema_cookie_bump;
PRAGMA writable_schema = RESET;
