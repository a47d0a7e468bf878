-- Without the state, an incomplete run or task reads as failed: the nearest state that
-- still says something is wrong.
UPDATE geoflow_runs SET status = 'failed' WHERE status = 'incomplete';
UPDATE geoflow_run_tasks SET state = 'failed' WHERE state = 'incomplete';
ALTER TABLE geoflow_runs DROP CONSTRAINT geoflow_runs_status_check,
    ADD CONSTRAINT geoflow_runs_status_check
    CHECK (status IN ('pending', 'running', 'done', 'failed', 'interrupted'));
ALTER TABLE geoflow_run_tasks DROP CONSTRAINT geoflow_run_tasks_state_check,
    ADD CONSTRAINT geoflow_run_tasks_state_check
    CHECK (state IN ('pending', 'running', 'done', 'failed', 'upstream_failed', 'interrupted'));
