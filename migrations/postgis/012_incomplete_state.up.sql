-- A run or a task whose harvest cannot be proved complete (the server counted features
-- that were neither stored nor shown to be gone) ends 'incomplete'. Units keep their
-- states: a short tile is a failed unit with a dead letter of class incomplete.
ALTER TABLE geoflow_runs DROP CONSTRAINT geoflow_runs_status_check,
    ADD CONSTRAINT geoflow_runs_status_check
    CHECK (status IN ('pending', 'running', 'done', 'incomplete', 'failed', 'interrupted'));
ALTER TABLE geoflow_run_tasks DROP CONSTRAINT geoflow_run_tasks_state_check,
    ADD CONSTRAINT geoflow_run_tasks_state_check
    CHECK (state IN ('pending', 'running', 'done', 'incomplete', 'failed', 'upstream_failed', 'interrupted'));
