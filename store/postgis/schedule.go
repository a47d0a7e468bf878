package postgis

import (
	"context"
	"fmt"
	"time"

	"github.com/geoflow/geoflow/store"
	"github.com/jackc/pgx/v5"
)

// flowLockClass is the first half of the two-key advisory lock a scheduler holds on a flow
// while a scheduled run of it goes (the second half is hashtext(flow)), so that every
// instance over the database can tell that the flow is busy, and a crashed instance's lock
// ends with its session.
const flowLockClass = 0x67660002

// ClaimFire records that instance takes flow's fire at scheduledFor. It returns false when
// the fire is already claimed, by another instance or earlier by this one: the caller must
// then leave it alone. The insert is the arbiter, so two instances never both win.
func (s *Store) ClaimFire(ctx context.Context, flow string, scheduledFor time.Time, instance string, catchup bool) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO geoflow_schedule_fires (flow, scheduled_for, claimed_by, catchup)
		VALUES ($1, $2, $3, $4) ON CONFLICT (flow, scheduled_for) DO NOTHING`, flow, scheduledFor, instance, catchup)
	if err != nil {
		return false, translate(fmt.Sprintf("claiming the %s fire of flow %q", scheduledFor.Format(time.RFC3339), flow), err)
	}
	return tag.RowsAffected() == 1, nil
}

// MarkFire records what became of a claimed fire. A non-zero runID links the fire and its
// run both ways (the run's scheduled_for is set when it is still empty).
func (s *Store) MarkFire(ctx context.Context, flow string, scheduledFor time.Time, status string, runID int64, errMsg string) error {
	what := fmt.Sprintf("recording the %s fire of flow %q as %s", scheduledFor.Format(time.RFC3339), flow, status)
	var run *int64
	if runID != 0 {
		run = &runID
	}
	return translate(what, pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE geoflow_schedule_fires
			SET status = $3, run_id = coalesce($4, run_id), error = NULLIF($5, ''), updated_at = now()
			WHERE flow = $1 AND scheduled_for = $2`, flow, scheduledFor, status, run, errMsg); err != nil {
			return err
		}
		if run == nil {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE geoflow_runs SET scheduled_for = $2
			WHERE id = $1 AND scheduled_for IS NULL`, runID, scheduledFor)
		return err
	}))
}

// LastFire returns the latest fire of flow that any instance claimed, whatever became of
// it; ok is false when the flow never fired.
func (s *Store) LastFire(ctx context.Context, flow string) (at time.Time, ok bool, err error) {
	var last *time.Time
	err = s.pool.QueryRow(ctx, `SELECT max(scheduled_for) FROM geoflow_schedule_fires WHERE flow = $1`, flow).Scan(&last)
	if err != nil {
		return time.Time{}, false, translate(fmt.Sprintf("reading the last fire of flow %q", flow), err)
	}
	if last == nil {
		return time.Time{}, false, nil
	}
	return *last, true, nil
}

// ListFires returns the fires of flow (all flows when flow is ""), latest first, at most
// limit of them (all when limit <= 0).
func (s *Store) ListFires(ctx context.Context, flow string, limit int) ([]store.Fire, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT flow, scheduled_for, claimed_by, claimed_at, catchup, status, run_id, coalesce(error, '')
		FROM geoflow_schedule_fires WHERE ($1 = '' OR flow = $1)
		ORDER BY scheduled_for DESC, flow LIMIT $2`, flow, lim)
	if err != nil {
		return nil, translate("listing scheduled fires", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Fire, error) {
		var f store.Fire
		err := r.Scan(&f.Flow, &f.ScheduledFor, &f.ClaimedBy, &f.ClaimedAt, &f.Catchup, &f.Status, &f.RunID, &f.Error)
		return f, err
	})
	return out, translate("listing scheduled fires", err)
}

// PruneFires deletes the fires claimed before cutoff, except each flow's latest one, which
// catchup needs. It returns how many it deleted.
func (s *Store) PruneFires(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM geoflow_schedule_fires f
		WHERE f.scheduled_for < $1
		  AND f.scheduled_for < (SELECT max(l.scheduled_for) FROM geoflow_schedule_fires l WHERE l.flow = f.flow)`, cutoff)
	if err != nil {
		return 0, translate("pruning old scheduled fires", err)
	}
	return tag.RowsAffected(), nil
}

// FlowRunning reports whether a run of flow is going anywhere: recorded as running, with
// its run lock held by a live session. A run whose process crashed is not going.
func (s *Store) FlowRunning(ctx context.Context, flow string) (bool, error) {
	var running bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (
		SELECT 1 FROM geoflow_runs r
		JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted
		     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		     AND l.classid::bigint = $2 AND l.objid::bigint = r.id % 4294967296 AND l.objsubid = 2
		WHERE r.flow = $1 AND r.status = 'running')`, flow, runLockClass).Scan(&running)
	return running, translate(fmt.Sprintf("checking whether flow %q is running", flow), err)
}

// flowLock is an advisory lock on a flow, held on a connection of its own.
type flowLock struct {
	release func()
}

// Release implements store.FlowLock; it is a no-op once released.
func (l *flowLock) Release() {
	if l != nil && l.release != nil {
		l.release()
		l.release = nil
	}
}

// TryLockFlow implements store.Fires: exclusively for a run that must not overlap, shared
// for one that may. ok is false when the lock is held in a conflicting mode by another
// session, that is, a run of the flow is going.
func (s *Store) TryLockFlow(ctx context.Context, flow string, shared bool) (lock store.FlowLock, ok bool, err error) {
	what := fmt.Sprintf("locking flow %q", flow)
	conn, err := s.lockConn(ctx, what)
	if err != nil {
		return nil, false, err
	}
	fn := "pg_try_advisory_lock"
	if shared {
		fn = "pg_try_advisory_lock_shared"
	}
	if err := conn.QueryRow(ctx, "SELECT "+fn+"($1, hashtext($2))", flowLockClass, flow).Scan(&ok); err != nil {
		closeConn(conn)()
		return nil, false, translate(what, err)
	}
	if !ok {
		closeConn(conn)()
		return nil, false, nil
	}
	return &flowLock{release: closeConn(conn)}, true, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return translate("pinging the database", s.pool.Ping(ctx))
}

// CheckMigrations implements store.Health.
func (s *Store) CheckMigrations(ctx context.Context) error { return store.CheckMigrations(ctx, s) }
