package gpkg

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/geoflow/geoflow/store"
)

// runSelect reads runs; the counts of a run still going are counted live from its units.
const runSelect = `SELECT r.id, r.flow, r.status, r.trigger, r.scheduled_for, r.started_at, r.finished_at,
	coalesce(c.total, r.units_total), coalesce(c.done, r.units_done), coalesce(c.dead, r.units_dead),
	coalesce(c.ins, r.features_inserted), coalesce(c.skip, r.features_skipped), coalesce(c.upd, r.features_updated),
	coalesce(c.rej, r.features_rejected), coalesce(c.merged, r.features_merged),
	(SELECT coalesce(sum(features_deleted), 0) FROM geoflow_run_tasks d WHERE d.run_id = r.id), coalesce(r.error, ''),
	coalesce(r.finished_by, ''), r.adopted_at, r.area_min_x, r.area_min_y, r.area_max_x, r.area_max_y,
	(SELECT coalesce(sum(features_overlap), 0) FROM geoflow_units o WHERE o.run_id = r.id)
FROM geoflow_runs r
LEFT JOIN (
	SELECT u.run_id, count(*) AS total,
	       count(*) FILTER (WHERE u.state = 'done') AS done,
	       count(*) FILTER (WHERE u.state = 'failed') AS dead,
	       coalesce(sum(u.features_inserted), 0) AS ins,
	       coalesce(sum(u.features_skipped), 0) AS skip,
	       coalesce(sum(u.features_updated), 0) AS upd,
	       coalesce(sum(u.features_rejected), 0) AS rej,
	       coalesce(sum(u.features_merged), 0) AS merged
	FROM geoflow_units u WHERE u.run_id IN (SELECT id FROM geoflow_runs WHERE status = 'running') GROUP BY u.run_id) c
	ON c.run_id = r.id AND r.status = 'running'`

func scanRun(rows *sql.Rows) (store.RunRecord, error) {
	var (
		r    store.RunRecord
		area box
	)
	err := rows.Scan(append([]any{&r.ID, &r.Flow, &r.Status, &r.Trigger, nullTime{&r.ScheduledFor}, reqTime{&r.StartedAt}, nullTime{&r.FinishedAt},
		&r.UnitsTotal, &r.UnitsDone, &r.UnitsDead, &r.FeaturesInserted, &r.FeaturesSkipped, &r.FeaturesUpdated,
		&r.FeaturesRejected, &r.FeaturesMerged, &r.FeaturesDeleted, &r.Error, &r.FinishedBy, nullTime{&r.AdoptedAt}}, append(area.dest(), &r.FeaturesOverlap)...)...)
	if b := area.bound(); b != nil {
		r.Area = &[4]float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
	}
	return r, err
}

// crashed marks r crashed when it is recorded as running and no process holds its lock.
func (s *Store) crashed(r *store.RunRecord) error {
	if r.Status != store.Running {
		return nil
	}
	busy, err := s.locks.busy(lockRunBase + r.ID)
	if err != nil {
		return fmt.Errorf("checking whether run %d is going: %w", r.ID, err)
	}
	if !busy {
		r.Status = store.Crashed
	}
	return nil
}

// ListRuns implements store.History.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.RunRecord, error) {
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	status, sqlLimit := f.Status, limit
	if status == string(store.Crashed) || status == string(store.Running) {
		// Both are recorded as running; which is which shows once read, so the
		// limit applies after.
		status, sqlLimit = string(store.Running), -1
	}
	rows, err := s.r.QueryContext(ctx, runSelect+`
		WHERE (?1 = '' OR r.flow = ?1) AND (?2 = '' OR r.status = ?2)
		ORDER BY r.id DESC LIMIT ?3`, f.Flow, status, sqlLimit)
	if err != nil {
		return nil, translate("listing runs", err)
	}
	defer rows.Close()
	var out []store.RunRecord
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, translate("listing runs", err)
		}
		if err := s.crashed(&r); err != nil {
			return nil, err
		}
		if (f.Status == "" || string(r.Status) == f.Status) && (limit < 0 || len(out) < limit) {
			out = append(out, r)
		}
	}
	return out, translate("listing runs", rows.Err())
}

// GetRun implements store.History.
func (s *Store) GetRun(ctx context.Context, id int64) (store.RunRecord, error) {
	what := fmt.Sprintf("reading run %d", id)
	rows, err := s.r.QueryContext(ctx, runSelect+` WHERE r.id = ?`, id)
	if err != nil {
		return store.RunRecord{}, translate(what, err)
	}
	var run store.RunRecord
	found := rows.Next()
	if found {
		run, err = scanRun(rows)
	}
	rows.Close()
	switch {
	case err != nil:
		return run, translate(what, err)
	case !found:
		return run, translate(what, sql.ErrNoRows)
	}
	if err := s.crashed(&run); err != nil {
		return run, err
	}
	rows, err = s.r.QueryContext(ctx, `SELECT t.task, t.type, t.state, t.started_at, t.finished_at,
			coalesce(c.total, t.units_total), coalesce(c.done, t.units_done), coalesce(c.dead, t.units_dead),
			coalesce(c.ins, t.features_inserted), coalesce(c.skip, t.features_skipped), coalesce(c.upd, t.features_updated),
			coalesce(c.rej, t.features_rejected), coalesce(c.merged, t.features_merged),
			t.features_deleted, t.versions_closed, t.features_unchanged, coalesce(t.mirror_note, ''), coalesce(t.error, ''),
			(SELECT coalesce(sum(o.features_overlap), 0) FROM geoflow_units o WHERE o.run_id = t.run_id AND o.task = t.task)
		FROM geoflow_run_tasks t
		LEFT JOIN (
			SELECT u.task, count(*) AS total,
			       count(*) FILTER (WHERE u.state = 'done') AS done,
			       count(*) FILTER (WHERE u.state = 'failed') AS dead,
			       coalesce(sum(u.features_inserted), 0) AS ins,
			       coalesce(sum(u.features_skipped), 0) AS skip,
			       coalesce(sum(u.features_updated), 0) AS upd,
			       coalesce(sum(u.features_rejected), 0) AS rej,
			       coalesce(sum(u.features_merged), 0) AS merged
			FROM geoflow_units u WHERE u.run_id = ?1 GROUP BY u.task) c ON c.task = t.task AND t.state = 'running'
		WHERE t.run_id = ?1 ORDER BY t.started_at IS NULL, t.started_at, t.task`, id)
	if err != nil {
		return run, translate(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t store.TaskRecord
		if err := rows.Scan(&t.Task, &t.Type, &t.State, nullTime{&t.StartedAt}, nullTime{&t.FinishedAt},
			&t.UnitsTotal, &t.UnitsDone, &t.UnitsDead, &t.FeaturesInserted, &t.FeaturesSkipped, &t.FeaturesUpdated,
			&t.FeaturesRejected, &t.FeaturesMerged, &t.FeaturesDeleted, &t.VersionsClosed, &t.FeaturesUnchanged, &t.MirrorNote, &t.Error,
			&t.FeaturesOverlap); err != nil {
			return run, translate(what, err)
		}
		run.Tasks = append(run.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return run, translate(what, err)
	}
	byTask, err := s.rowsAffected(ctx, id)
	if err != nil {
		return run, err
	}
	run.SetRowsAffected(byTask)
	run.RunHosts, err = s.runHosts(ctx, id)
	return run, err
}

// ShortFeatures implements tasks.Records.
func (s *Store) ShortFeatures(ctx context.Context, runID int64, task string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(sum(features_short), 0) FROM geoflow_units WHERE run_id = ? AND task = ?`,
		runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the features task %q's server counted and did not return", task), err)
}

// MergedFeatures implements tasks.Records.
func (s *Store) MergedFeatures(ctx context.Context, runID int64, task string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(sum(features_merged), 0) FROM geoflow_units WHERE run_id = ? AND task = ?`,
		runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the merged features of task %q", task), err)
}
