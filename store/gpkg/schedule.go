package gpkg

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/geoflow/geoflow/store"
)

// ClaimFire implements store.Fires: the insert is the arbiter.
func (s *Store) ClaimFire(ctx context.Context, flow string, scheduledFor time.Time, instance string, catchup bool) (bool, error) {
	res, err := s.w.ExecContext(ctx, `INSERT INTO geoflow_schedule_fires (flow, scheduled_for, claimed_by, catchup)
		VALUES (?, ?, ?, ?) ON CONFLICT (flow, scheduled_for) DO NOTHING`, flow, ts(scheduledFor), instance, catchup)
	if err != nil {
		return false, translate(fmt.Sprintf("claiming the %s fire of flow %q", scheduledFor.Format(time.RFC3339), flow), err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MarkFire implements store.Fires.
func (s *Store) MarkFire(ctx context.Context, flow string, scheduledFor time.Time, status string, runID int64, errMsg string) error {
	what := fmt.Sprintf("recording the %s fire of flow %q as %s", scheduledFor.Format(time.RFC3339), flow, status)
	var run any
	if runID != 0 {
		run = runID
	}
	return translate(what, s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE geoflow_schedule_fires
			SET status = ?, run_id = coalesce(?, run_id), error = NULLIF(?, ''), updated_at = `+now+`
			WHERE flow = ? AND scheduled_for = ?`, status, run, errMsg, flow, ts(scheduledFor)); err != nil {
			return err
		}
		if run == nil {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE geoflow_runs SET scheduled_for = ? WHERE id = ? AND scheduled_for IS NULL`, ts(scheduledFor), runID)
		return err
	}))
}

// LastFire implements store.Fires.
func (s *Store) LastFire(ctx context.Context, flow string) (time.Time, bool, error) {
	var last *time.Time
	err := s.r.QueryRowContext(ctx, `SELECT max(scheduled_for) FROM geoflow_schedule_fires WHERE flow = ?`, flow).Scan(nullTime{&last})
	if err != nil {
		return time.Time{}, false, translate(fmt.Sprintf("reading the last fire of flow %q", flow), err)
	}
	if last == nil {
		return time.Time{}, false, nil
	}
	return *last, true, nil
}

// ListFires implements store.Fires.
func (s *Store) ListFires(ctx context.Context, flow string, limit int) ([]store.Fire, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT flow, scheduled_for, claimed_by, claimed_at, catchup, status, run_id, coalesce(error, '')
		FROM geoflow_schedule_fires WHERE (?1 = '' OR flow = ?1) ORDER BY scheduled_for DESC, flow LIMIT ?2`, flow, limit)
	if err != nil {
		return nil, translate("listing scheduled fires", err)
	}
	defer rows.Close()
	var out []store.Fire
	for rows.Next() {
		var f store.Fire
		var run sql.NullInt64
		if err := rows.Scan(&f.Flow, reqTime{&f.ScheduledFor}, &f.ClaimedBy, reqTime{&f.ClaimedAt}, &f.Catchup, &f.Status, &run, &f.Error); err != nil {
			return nil, translate("listing scheduled fires", err)
		}
		if run.Valid {
			f.RunID = &run.Int64
		}
		out = append(out, f)
	}
	return out, translate("listing scheduled fires", rows.Err())
}

// PruneFires implements store.Fires: fires claimed before cutoff go, except each flow's
// latest, which catch-up needs.
func (s *Store) PruneFires(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM geoflow_schedule_fires
		WHERE scheduled_for < ?1
		  AND scheduled_for < (SELECT max(l.scheduled_for) FROM geoflow_schedule_fires l WHERE l.flow = geoflow_schedule_fires.flow)`, ts(cutoff))
	if err != nil {
		return 0, translate("pruning old scheduled fires", err)
	}
	return res.RowsAffected()
}

// FlowRunning implements store.Fires: a run of flow recorded as running whose lock some
// process holds. A run whose process died is not going.
func (s *Store) FlowRunning(ctx context.Context, flow string) (bool, error) {
	ids, err := s.ids(ctx, `SELECT id FROM geoflow_runs WHERE flow = ? AND status = 'running'`, flow)
	if err != nil {
		return false, translate(fmt.Sprintf("checking whether flow %q is running", flow), err)
	}
	for _, id := range ids {
		busy, err := s.locks.busy(lockRunBase + id)
		if err != nil || busy {
			return busy, err
		}
	}
	return false, nil
}

// flowLock is a lock on the lock file, held while a scheduled run goes.
type flowLock struct{ release func() }

// Release implements store.FlowLock.
func (l *flowLock) Release() { l.release() }

// TryLockFlow implements store.Fires.
func (s *Store) TryLockFlow(ctx context.Context, flow string, shared bool) (store.FlowLock, bool, error) {
	release, ok, err := s.locks.try(flowOffset(lockSched, flow), !shared)
	if err != nil || !ok {
		return nil, false, err
	}
	return &flowLock{release: release}, true, nil
}

// HoldServer takes the file's server lock without waiting: a GeoPackage takes one
// geoflow serve at a time (one writer; fires are claimed in one process). It fails
// wrapping store.ErrServerBusy when another process holds it.
func (s *Store) HoldServer(ctx context.Context) (release func(), err error) {
	release, ok, err := s.locks.try(lockServe, true)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", s.path, store.ErrServerBusy)
	}
	return release, nil
}
