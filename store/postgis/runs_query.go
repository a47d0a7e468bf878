package postgis

import (
	"context"
	"fmt"

	"github.com/geoflow/geoflow/store"
	"github.com/jackc/pgx/v5"
)

// runSelect reads runs with live counts for the ones still running. The status test inside
// the lateral subquery spares finished runs the count (a one-time filter); the one in the
// join leaves them NULL counts rather than an aggregate's zeros.
var runSelect = `SELECT r.id, r.flow, ` + runStatus + `, r.trigger, r.scheduled_for, r.started_at, r.finished_at,
	coalesce(c.total, r.units_total), coalesce(c.done, r.units_done), coalesce(c.dead, r.units_dead),
	coalesce(c.ins, r.features_inserted), coalesce(c.skip, r.features_skipped), coalesce(c.upd, r.features_updated),
	coalesce(c.rej, r.features_rejected), coalesce(c.merged, r.features_merged),
	(SELECT coalesce(sum(features_deleted), 0) FROM geoflow_run_tasks d WHERE d.run_id = r.id), coalesce(r.error, ''),
	coalesce(r.finished_by, ''), r.adopted_at, ST_XMin(ST_GeomFromEWKB(r.area)), ST_YMin(ST_GeomFromEWKB(r.area)), ST_XMax(ST_GeomFromEWKB(r.area)), ST_YMax(ST_GeomFromEWKB(r.area)),
	(SELECT coalesce(sum(features_overlap), 0) FROM geoflow_units o WHERE o.run_id = r.id)
FROM geoflow_runs r
LEFT JOIN LATERAL (
	SELECT count(*) AS total,
	       count(*) FILTER (WHERE u.state = 'done') AS done,
	       count(*) FILTER (WHERE u.state = 'failed') AS dead,
	       coalesce(sum(u.features_inserted), 0) AS ins,
	       coalesce(sum(u.features_skipped), 0) AS skip,
	       coalesce(sum(u.features_updated), 0) AS upd,
	       coalesce(sum(u.features_rejected), 0) AS rej,
	       coalesce(sum(u.features_merged), 0) AS merged
	FROM geoflow_units u WHERE u.run_id = r.id AND r.status = 'running') c ON r.status = 'running'`

// runStatus is a run's status, crashed for one recorded as running whose advisory lock
// (runLockClass, id) no session holds: its process died.
// Advisory locks are per database, pg_locks is per cluster: the lock must be this
// database's (as FlowRunning checks it).
var runStatus = fmt.Sprintf(`CASE WHEN r.status = 'running' AND NOT EXISTS (SELECT 1 FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid::bigint = %d AND l.objid::bigint = r.id %% 4294967296 AND l.objsubid = 2)
	THEN 'crashed' ELSE r.status END`, runLockClass)

func scanRun(row pgx.CollectableRow) (store.RunRecord, error) {
	var (
		r              store.RunRecord
		x0, y0, x1, y1 *float64
	)
	err := row.Scan(&r.ID, &r.Flow, &r.Status, &r.Trigger, &r.ScheduledFor, &r.StartedAt, &r.FinishedAt,
		&r.UnitsTotal, &r.UnitsDone, &r.UnitsDead, &r.FeaturesInserted, &r.FeaturesSkipped, &r.FeaturesUpdated,
		&r.FeaturesRejected, &r.FeaturesMerged, &r.FeaturesDeleted, &r.Error, &r.FinishedBy, &r.AdoptedAt, &x0, &y0, &x1, &y1, &r.FeaturesOverlap)
	if x0 != nil && y0 != nil && x1 != nil && y1 != nil {
		r.Area = &[4]float64{*x0, *y0, *x1, *y1}
	}
	return r, err
}

// ListRuns returns the runs f selects, latest first.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.RunRecord, error) {
	var limit *int
	switch {
	case f.Limit == 0:
		l := 100
		limit = &l
	case f.Limit > 0:
		limit = &f.Limit
	}
	rows, err := s.pool.Query(ctx, runSelect+`
		WHERE ($1 = '' OR r.flow = $1) AND ($2 = '' OR `+runStatus+` = $2)
		ORDER BY r.id DESC LIMIT $3`, f.Flow, f.Status, limit)
	if err != nil {
		return nil, translate("listing runs", err)
	}
	out, err := pgx.CollectRows(rows, scanRun)
	return out, translate("listing runs", err)
}

// GetRun returns one run with its tasks, or an error wrapping ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id int64) (store.RunRecord, error) {
	what := fmt.Sprintf("reading run %d", id)
	rows, err := s.pool.Query(ctx, runSelect+` WHERE r.id = $1`, id)
	if err != nil {
		return store.RunRecord{}, translate(what, err)
	}
	run, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if err != nil {
		return store.RunRecord{}, translate(what, err)
	}
	rows, err = s.pool.Query(ctx, `SELECT t.task, t.type, t.state, t.started_at, t.finished_at,
			coalesce(c.total, t.units_total), coalesce(c.done, t.units_done), coalesce(c.dead, t.units_dead),
			coalesce(c.ins, t.features_inserted), coalesce(c.skip, t.features_skipped), coalesce(c.upd, t.features_updated),
			coalesce(c.rej, t.features_rejected), coalesce(c.merged, t.features_merged),
			t.features_deleted, t.versions_closed, t.features_unchanged, coalesce(t.mirror_note, ''), coalesce(t.error, ''),
			(SELECT coalesce(sum(o.features_overlap), 0) FROM geoflow_units o WHERE o.run_id = t.run_id AND o.task = t.task)
		FROM geoflow_run_tasks t
		LEFT JOIN LATERAL (
			SELECT count(*) AS total,
			       count(*) FILTER (WHERE u.state = 'done') AS done,
			       count(*) FILTER (WHERE u.state = 'failed') AS dead,
			       coalesce(sum(u.features_inserted), 0) AS ins,
			       coalesce(sum(u.features_skipped), 0) AS skip,
			       coalesce(sum(u.features_updated), 0) AS upd,
			       coalesce(sum(u.features_rejected), 0) AS rej,
			       coalesce(sum(u.features_merged), 0) AS merged
			FROM geoflow_units u WHERE u.run_id = t.run_id AND u.task = t.task AND t.state = 'running') c ON t.state = 'running'
		WHERE t.run_id = $1 ORDER BY t.started_at NULLS LAST, t.task`, id)
	if err != nil {
		return store.RunRecord{}, translate(what, err)
	}
	run.Tasks, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TaskRecord, error) {
		var t store.TaskRecord
		err := row.Scan(&t.Task, &t.Type, &t.State, &t.StartedAt, &t.FinishedAt,
			&t.UnitsTotal, &t.UnitsDone, &t.UnitsDead, &t.FeaturesInserted, &t.FeaturesSkipped, &t.FeaturesUpdated,
			&t.FeaturesRejected, &t.FeaturesMerged, &t.FeaturesDeleted, &t.VersionsClosed, &t.FeaturesUnchanged, &t.MirrorNote, &t.Error,
			&t.FeaturesOverlap)
		return t, err
	})
	if err != nil {
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
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(features_short), 0) FROM geoflow_units WHERE run_id = $1 AND task = $2`,
		runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the features task %q's server counted and did not return", task), err)
}

// MergedFeatures implements tasks.Records.
func (s *Store) MergedFeatures(ctx context.Context, runID int64, task string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(features_merged), 0) FROM geoflow_units WHERE run_id = $1 AND task = $2`,
		runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the merged features of task %q", task), err)
}
