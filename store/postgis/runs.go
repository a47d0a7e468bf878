package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/geoflow/geoflow/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/paulmach/orb"
)

// runLockClass is the first half of the two-key advisory lock a process holds on a run
// while it executes it, so a resume never picks up a run that is still going elsewhere.
const runLockClass = 0x67660001

// lockConn opens a connection of its own, outside the pool, to hold a session advisory
// lock for as long as a run or a scheduled flow goes: a lock never takes a pooled
// connection away from the units, so the pool need not grow with the number of runs in
// flight. Closing it releases every lock it holds, also when the process dies.
func (s *Store) lockConn(ctx context.Context, what string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, translate(what, err)
	}
	return conn, nil
}

// closeConn returns a func that releases the locks conn holds, at once (so the next
// statement of anyone sees them free), and closes it; ending the session would release
// them too, but the server notices a closed connection only a moment later.
func closeConn(conn *pgx.Conn) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
		_ = conn.Close(ctx)
	}
}

// StartRun implements store.Runs.
func (s *Store) StartRun(ctx context.Context, st store.RunStart) (*store.Run, error) {
	conn, err := s.lockConn(ctx, "starting a run")
	if err != nil {
		return nil, err
	}
	run, err := s.startRun(ctx, conn, st)
	if err != nil {
		closeConn(conn)()
		return nil, err
	}
	h := &runHold{s: s, id: run.ID, by: st.AdoptedBy, conn: conn}
	run.Release, run.Held = h.release, h.held
	return run, nil
}

// runHold is a process's hold on a run: the run's advisory lock, on a connection of its
// own. by is the adopter's name for a run it adopted, "" otherwise.
type runHold struct {
	s    *Store
	id   int64
	by   string
	mu   sync.Mutex
	conn *pgx.Conn // nil once released
}

// held implements store.Run.Held. A session that ended (a restart, a cut connection) took
// the lock with it, and the run read as orphaned meanwhile: the lock is taken again on a
// new connection only when nobody else holds it and the run is still this process's
// (running, with the adopter it had), not adopted, resumed or finished by another since.
func (h *runHold) held(ctx context.Context) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return false, nil
	}
	// A connection cut off without a word answers nothing: it must not hold the caller.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if h.conn.Ping(ctx) == nil {
		return true, nil
	}
	what := fmt.Sprintf("taking the hold on run %d again", h.id)
	conn, err := h.s.lockConn(ctx, what)
	if err != nil {
		return false, err
	}
	var locked, ours bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", runLockClass, int32(h.id)).Scan(&locked); err != nil || !locked {
		closeConn(conn)()
		return false, translate(what, err)
	}
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM geoflow_runs WHERE id = $1 AND status = 'running' AND coalesce(finished_by, '') = $2)`,
		h.id, h.by).Scan(&ours)
	if err != nil || !ours {
		closeConn(conn)()
		return false, translate(what, err)
	}
	_ = h.conn.Close(ctx)
	h.conn = conn
	return true, nil
}

// release lets go of the run at once.
func (h *runHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil {
		closeConn(h.conn)()
		h.conn = nil
	}
}

// resumable selects the runs of a flow that --resume may continue ($2, when above 0,
// names the one): one still marked
// running (its process crashed: nobody holds its lock, checked next), interrupted, or
// failed with work left that is neither done nor dead-lettered (a unit whose outcome could
// not be recorded, a task that failed before or while planning).
const resumable = `SELECT r.id FROM geoflow_runs r
	WHERE r.flow = $1 AND (r.status IN ('running', 'interrupted') OR (r.status = 'failed' AND (
		EXISTS (SELECT 1 FROM geoflow_units u WHERE u.run_id = r.id AND u.state <> 'done'
			AND NOT EXISTS (SELECT 1 FROM geoflow_dlq d WHERE d.run_id = u.run_id AND d.task = u.task AND d.unit_key = u.key))
		OR EXISTS (SELECT 1 FROM geoflow_run_tasks t WHERE t.run_id = r.id AND t.state IN ('failed', 'running', 'pending', 'interrupted')
			AND NOT EXISTS (SELECT 1 FROM geoflow_units u WHERE u.run_id = t.run_id AND u.task = t.task AND u.state = 'failed')))))
	AND ($2 = 0 OR r.id = $2)
	ORDER BY r.id DESC LIMIT 20`

// adoptable selects run $2 of flow $1 while it is recorded running: an adoption takes over
// only a run whose process is gone (its lock, checked next, free), never one that a
// person stopped or that failed.
const adoptable = `SELECT r.id FROM geoflow_runs r WHERE r.flow = $1 AND r.id = $2 AND r.status = 'running'`

func (s *Store) startRun(ctx context.Context, conn *pgx.Conn, st store.RunStart) (*store.Run, error) {
	if st.Resume {
		return s.resumeRun(ctx, conn, st)
	}
	return s.newRun(ctx, conn, st)
}

// resumeRun takes over the latest run st selects that no other session holds. Its status
// is read again once its lock is held: a run that ended between the two (its holder
// finished it and let go) is not taken, so two adopters racing for a run adopt it once.
func (s *Store) resumeRun(ctx context.Context, conn *pgx.Conn, st store.RunStart) (*store.Run, error) {
	query, statuses := resumable, []string{"running", "interrupted", "failed"}
	if st.AdoptedBy != "" {
		query, statuses = adoptable, []string{"running"}
	}
	rows, err := conn.Query(ctx, query, st.Flow, st.RunID)
	if err != nil {
		return nil, translate("finding a run to resume", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, translate("finding a run to resume", err)
	}
	for _, id := range ids {
		var locked bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", runLockClass, int32(id)).Scan(&locked); err != nil {
			return nil, translate("locking the run to resume", err)
		}
		if !locked {
			continue // still running in another process
		}
		run, err := s.takeOver(ctx, conn, id, st, statuses)
		if err != nil || run != nil {
			return run, err
		}
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", runLockClass, int32(id)); err != nil {
			return nil, translate("letting go of a run that ended meanwhile", err)
		}
	}
	return nil, store.NothingToResume(st)
}

// takeOver marks run id, whose lock this session holds, running again when its status is
// still one of statuses (else it returns nil, nil), recording who adopted it (or nobody),
// and reopens the units a crash or a lost database left failed without a dead letter.
func (s *Store) takeOver(ctx context.Context, conn *pgx.Conn, id int64, st store.RunStart, statuses []string) (*store.Run, error) {
	what := fmt.Sprintf("resuming run %d", id)
	run := &store.Run{ID: id, Flow: st.Flow, Resumed: true}
	var x0, y0, x1, y1 *float64
	err := conn.QueryRow(ctx, `UPDATE geoflow_runs SET status = 'running', finished_at = NULL, error = NULL,
			finished_by = NULLIF($3, ''), adopted_at = CASE WHEN $3 <> '' THEN now() END
		WHERE id = $1 AND status = ANY($2) RETURNING started_at, ST_XMin(ST_GeomFromEWKB(area)), ST_YMin(ST_GeomFromEWKB(area)), ST_XMax(ST_GeomFromEWKB(area)), ST_YMax(ST_GeomFromEWKB(area)), only_tasks,
			coalesce(flow_file, ''), coalesce(flow_text, ''), coalesce(flow_hash, ''), distributed`, id, statuses, st.AdoptedBy).
		Scan(&run.StartedAt, &x0, &y0, &x1, &y1, &run.OnlyTasks, &run.FlowFile, &run.FlowText, &run.FlowHash, &run.Distributed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(what, err)
	}
	if x0 != nil {
		run.Area = &orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}
	}
	s.distributed.Store(id, run.Distributed)
	if _, err := conn.Exec(ctx, `UPDATE geoflow_units u SET state = 'pending' WHERE u.run_id = $1 AND u.state IN ('failed', 'interrupted', 'running')
		AND NOT EXISTS (SELECT 1 FROM geoflow_dlq d WHERE d.run_id = u.run_id AND d.task = u.task AND d.unit_key = u.key)`, id); err != nil {
		return nil, translate(what, err)
	}
	return run, nil
}

// newRun records a new run and takes its lock in one transaction: no other session sees
// the run before it is held, so none takes it for a crashed run (nor adopts it).
func (s *Store) newRun(ctx context.Context, conn *pgx.Conn, st store.RunStart) (*store.Run, error) {
	trigger := st.Trigger
	if trigger == "" {
		trigger = store.TriggerManual
	}
	var run store.Run
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO geoflow_runs (flow, trigger, area, only_tasks, flow_file, scheduled_for, flow_text, flow_hash, distributed)
			VALUES ($1, $2, `+envelopeSQL(3)+`, $7, NULLIF($8, ''), $9, NULLIF($10, ''), NULLIF($11, ''), $12) RETURNING id, started_at`,
			append(append([]any{st.Flow, trigger}, envelopeArgs(st.Area)...), st.OnlyTasks, st.FlowFile, st.ScheduledFor, st.FlowText, st.FlowHash, st.Distributed)...).
			Scan(&run.ID, &run.StartedAt)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", runLockClass, int32(run.ID))
		return err
	})
	if err != nil {
		return nil, translate("recording a new run and locking it", err)
	}
	run.Flow, run.Area, run.OnlyTasks = st.Flow, st.Area, st.OnlyTasks
	run.FlowFile, run.FlowText, run.FlowHash, run.Distributed = st.FlowFile, st.FlowText, st.FlowHash, st.Distributed
	if st.Distributed {
		s.distributed.Store(run.ID, true)
	}
	return &run, nil
}

// envelopeSQL is the SQL for a lon/lat polygon from four parameters starting at $n, as
// the EWKB the bookkeeping keeps (not a geometry: see migration 018), NULL when they are
// NULL.
func envelopeSQL(n int) string {
	return fmt.Sprintf("ST_AsEWKB(ST_MakeEnvelope($%d, $%d, $%d, $%d, 4326))", n, n+1, n+2, n+3)
}

func envelopeArgs(b *orb.Bound) []any {
	if b == nil {
		return []any{nil, nil, nil, nil}
	}
	return []any{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
}

// TaskState implements store.Runs.
func (s *Store) TaskState(ctx context.Context, runID int64, task string) (store.State, error) {
	var state store.State
	err := s.pool.QueryRow(ctx, "SELECT state FROM geoflow_run_tasks WHERE run_id = $1 AND task = $2", runID, task).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Pending, nil
	}
	return state, translate(fmt.Sprintf("reading the state of task %q", task), err)
}

// SetTaskState records a task's state. "running" sets its start time (once); the final
// states set its finish time and roll its units' counts up into it.
func (s *Store) SetTaskState(ctx context.Context, runID int64, task, typ string, state store.State, errMsg string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO geoflow_run_tasks (run_id, task, type, state, started_at, error)
		VALUES ($1, $2, $3, $4, CASE WHEN $4 = 'running' THEN now() END, NULLIF($5, ''))
		ON CONFLICT (run_id, task) DO UPDATE SET
			state = EXCLUDED.state,
			type = EXCLUDED.type,
			started_at = CASE WHEN EXCLUDED.state = 'running' THEN now() ELSE geoflow_run_tasks.started_at END,
			finished_at = CASE WHEN EXCLUDED.state IN ('done', 'incomplete', 'failed', 'upstream_failed', 'interrupted') THEN now() END,
			error = EXCLUDED.error`, runID, task, typ, state, errMsg)
	if err != nil {
		return translate(fmt.Sprintf("recording task %q as %s", task, state), err)
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE geoflow_run_tasks t SET
			units_total = c.total, units_done = c.done, units_dead = c.dead,
			features_inserted = c.ins, features_skipped = c.skip, features_updated = c.upd, bytes = c.bytes,
			features_rejected = c.rej, features_merged = c.merged
		FROM (SELECT count(*) AS total,
		             count(*) FILTER (WHERE state = 'done') AS done,
		             count(*) FILTER (WHERE state = 'failed') AS dead,
		             coalesce(sum(features_inserted), 0) AS ins,
		             coalesce(sum(features_skipped), 0) AS skip,
		             coalesce(sum(features_updated), 0) AS upd,
		             coalesce(sum(bytes), 0) AS bytes,
		             coalesce(sum(features_rejected), 0) AS rej,
		             coalesce(sum(features_merged), 0) AS merged
		      FROM geoflow_units WHERE run_id = $1 AND task = $2) c
		WHERE t.run_id = $1 AND t.task = $2`, runID, task)
	return translate(fmt.Sprintf("counting the units of task %q", task), err)
}

// AddUnits records planned units as pending. Units already recorded (a resumed run plans
// again) are left as they are.
func (s *Store) AddUnits(ctx context.Context, runID int64, task string, units []store.Unit) error {
	if d, err := s.runDistributed(ctx, s.pool, runID); err != nil {
		return err
	} else if d {
		return s.addDistributed(ctx, runID, task, units)
	}
	const batch = 5000
	for len(units) > 0 {
		n := min(batch, len(units))
		if err := addUnits(ctx, s.pool, runID, task, units[:n]); err != nil {
			return err
		}
		units = units[n:]
	}
	return nil
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func addUnits(ctx context.Context, q querier, runID int64, task string, units []store.Unit) error {
	keys := make([]string, len(units))
	parents := make([]*string, len(units))
	minx, miny, maxx, maxy := make([]*float64, len(units)), make([]*float64, len(units)), make([]*float64, len(units)), make([]*float64, len(units))
	specs := make([]*string, len(units))
	for i, u := range units {
		keys[i] = u.Key
		if u.Parent != "" {
			p := u.Parent
			parents[i] = &p
		}
		if u.BBox != nil {
			b := *u.BBox
			minx[i], miny[i], maxx[i], maxy[i] = &b.Min[0], &b.Min[1], &b.Max[0], &b.Max[1]
		}
		if len(u.Spec) > 0 {
			sp := string(u.Spec)
			specs[i] = &sp
		}
	}
	_, err := q.Exec(ctx, `
		INSERT INTO geoflow_units (run_id, task, key, parent_key, bbox, spec)
		SELECT $1, $2, k, p, CASE WHEN x0 IS NULL THEN NULL ELSE ST_AsEWKB(ST_MakeEnvelope(x0, y0, x1, y1, 4326)) END, sp::jsonb
		FROM unnest($3::text[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::text[])
		     AS u(k, p, x0, y0, x1, y1, sp)
		ON CONFLICT (run_id, task, key) DO NOTHING`,
		runID, task, keys, parents, minx, miny, maxx, maxy, specs)
	return translate(fmt.Sprintf("recording %d planned units of task %q", len(units), task), err)
}

// OpenUnits returns the units of a task that are not done, in key order: all of them in a
// new run, and what is left in a resumed one.
func (s *Store) OpenUnits(ctx context.Context, runID int64, task string) ([]store.Unit, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT key, coalesce(parent_key, ''), ST_XMin(ST_GeomFromEWKB(bbox)), ST_YMin(ST_GeomFromEWKB(bbox)), ST_XMax(ST_GeomFromEWKB(bbox)), ST_YMax(ST_GeomFromEWKB(bbox)), spec
		FROM geoflow_units WHERE run_id = $1 AND task = $2 AND state <> 'done' ORDER BY key`, runID, task)
	if err != nil {
		return nil, translate(fmt.Sprintf("reading the open units of task %q", task), err)
	}
	var out []store.Unit
	var (
		u              store.Unit
		x0, y0, x1, y1 *float64
		spec           []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&u.Key, &u.Parent, &x0, &y0, &x1, &y1, &spec}, func() error {
		unit := store.Unit{Key: u.Key, Parent: u.Parent}
		if x0 != nil {
			unit.BBox = &orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}
		}
		if len(spec) > 0 {
			unit.Spec = json.RawMessage(append([]byte(nil), spec...))
		}
		out = append(out, unit)
		return nil
	})
	return out, translate(fmt.Sprintf("reading the open units of task %q", task), err)
}

// StartUnit implements store.Units.
func (s *Store) StartUnit(ctx context.Context, ref store.UnitRef) error {
	_, err := s.pool.Exec(ctx, `UPDATE geoflow_units SET state = 'running', started_at = now()
		WHERE run_id = $1 AND task = $2 AND key = $3 AND state <> 'done'`, ref.RunID, ref.TaskID, ref.Key)
	return translate(fmt.Sprintf("recording unit %s of task %q as running", ref.Key, ref.TaskID), err)
}

// EndUnit implements store.Units: a unit that did not complete is failed (a dead letter,
// or none could be recorded) or interrupted (shutdown cut it short). A unit done stays
// done: a second execution of it (a pool's rescued job) cut short takes nothing back,
// and a worker's execution whose unit the pool took back records nothing (store.ErrUnitTaken).
func (s *Store) EndUnit(ctx context.Context, ref store.UnitRef, state store.State, errMsg string) error {
	err := s.unitWrite(ctx, ref, func(q querier) error {
		_, err := q.Exec(ctx, `UPDATE geoflow_units SET state = $4, finished_at = now(), error = NULLIF($5, ''),
			attempts = attempts + 1 WHERE run_id = $1 AND task = $2 AND key = $3 AND state <> 'done'`, ref.RunID, ref.TaskID, ref.Key, state, errMsg)
		return err
	})
	return translate(fmt.Sprintf("recording unit %s of task %q as %s", ref.Key, ref.TaskID, state), err)
}

// FinishRun records the run's final status and returns its totals. It commits
// synchronously, which also flushes every unit committed asynchronously before it (see
// beginUnit): a run that reports done is on disk.
func (s *Store) FinishRun(ctx context.Context, runID int64, status store.State, errMsg string) (store.RunSummary, error) {
	var sum store.RunSummary
	err := s.pool.QueryRow(ctx, `
		WITH c AS (
			SELECT count(*) AS total,
			       count(*) FILTER (WHERE state = 'done') AS done,
			       count(*) FILTER (WHERE state = 'failed') AS dead,
			       coalesce(sum(features_inserted), 0) AS ins,
			       coalesce(sum(features_skipped), 0) AS skip,
			       coalesce(sum(features_updated), 0) AS upd,
			       coalesce(sum(bytes), 0) AS bytes,
			       coalesce(sum(features_rejected), 0) AS rej,
			       coalesce(sum(features_merged), 0) AS merged
			FROM geoflow_units WHERE run_id = $1),
		-- A run that ends done needs its merged ids no more (no replay will recount).
		gone AS (DELETE FROM geoflow_merged WHERE run_id = $1 AND $2 = 'done')
		UPDATE geoflow_runs r SET status = $2, finished_at = now(), error = NULLIF($3, ''),
			units_total = c.total, units_done = c.done, units_dead = c.dead,
			features_inserted = c.ins, features_skipped = c.skip, features_updated = c.upd,
			features_rejected = c.rej, features_merged = c.merged
		FROM c WHERE r.id = $1
		RETURNING r.id, r.flow, r.status, c.total, c.done, c.dead, c.ins, c.skip, c.upd, c.bytes, r.started_at, r.finished_at,
			(SELECT coalesce(sum(features_deleted), 0) FROM geoflow_run_tasks WHERE run_id = r.id),
			(SELECT coalesce(sum(features_filtered), 0) FROM geoflow_units WHERE run_id = r.id),
			(SELECT coalesce(sum(features_overlap), 0) FROM geoflow_units WHERE run_id = r.id)`,
		runID, status, errMsg).Scan(&sum.ID, &sum.Flow, &sum.Status, &sum.UnitsTotal, &sum.UnitsDone, &sum.UnitsDead,
		&sum.Inserted, &sum.Skipped, &sum.Updated, &sum.Bytes, &sum.StartedAt, &sum.FinishedAt, &sum.Deleted, &sum.Filtered, &sum.Overlap)
	if err != nil {
		return sum, translate(fmt.Sprintf("finishing run %d", runID), err)
	}
	if sum.RowsAffected, err = s.runRowsAffected(ctx, runID); err != nil {
		return sum, err
	}
	sum.Hosts, err = s.runHosts(ctx, runID)
	return sum, err
}
