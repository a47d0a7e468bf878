package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/tasks"
)

// runLockClass is the first half of the two-key advisory lock a process holds on a run
// while it executes it, so a resume never picks up a run that is still going elsewhere.
const runLockClass = 0x67660001

// RunStart says which run to start.
type RunStart struct {
	Flow      string
	FlowFile  string     // absolute path of the flow file, for replays
	Trigger   string     // manual (default), schedule, replay
	Area      *orb.Bound // --bbox, lon/lat; nil for none
	OnlyTasks []string   // --task; nil for all
	// ScheduledFor is the fire time of a scheduled run (Trigger "schedule"); nil otherwise.
	ScheduledFor *time.Time
	// Resume continues the latest unfinished run of Flow (running with nobody holding
	// it, or interrupted) instead of starting a new one.
	Resume bool
}

// Run is a run this process holds. Close releases it.
type Run struct {
	ID        int64
	Flow      string
	Resumed   bool
	StartedAt time.Time
	// Area and OnlyTasks are what the run was started with (RunStart's); a resumed run
	// carries those it recorded when it first started, whatever the resume asked for.
	Area      *orb.Bound
	OnlyTasks []string
	conn      *pgxpool.Conn // holds the run's advisory lock
}

// Close releases the run's lock. It must be called once the run is finished.
func (r *Run) Close() {
	if r.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", runLockClass, int32(r.ID)) //nolint:errcheck // the session ends the lock too
	r.conn.Release()
	r.conn = nil
}

// ErrNothingToResume is returned by StartRun with Resume when the flow has no unfinished run.
var ErrNothingToResume = errors.New("pgstore: no unfinished run to resume")

// StartRun records a new run, or takes over an unfinished one, and locks it.
func (s *Store) StartRun(ctx context.Context, st RunStart) (*Run, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, translate("starting a run", err)
	}
	run, err := s.startRun(ctx, conn, st)
	if err != nil {
		// The session may hold a run's advisory lock taken before the failure (a
		// cancelled UPDATE, say): back in the pool, it would keep that run locked for
		// as long as the process lives. Closing the session releases every lock it holds.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Hijack().Close(closeCtx)
		return nil, err
	}
	run.conn = conn
	return run, nil
}

func (s *Store) startRun(ctx context.Context, conn *pgxpool.Conn, st RunStart) (*Run, error) {
	if st.Resume {
		rows, err := conn.Query(ctx, `SELECT id FROM geoflow_runs
			WHERE flow = $1 AND status IN ('running', 'interrupted') ORDER BY id DESC LIMIT 20`, st.Flow)
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
			run := &Run{ID: id, Flow: st.Flow, Resumed: true}
			var x0, y0, x1, y1 *float64
			err := conn.QueryRow(ctx, `UPDATE geoflow_runs SET status = 'running', finished_at = NULL, error = NULL
				WHERE id = $1 RETURNING started_at, ST_XMin(area), ST_YMin(area), ST_XMax(area), ST_YMax(area), only_tasks`, id).
				Scan(&run.StartedAt, &x0, &y0, &x1, &y1, &run.OnlyTasks)
			if err != nil {
				return nil, translate(fmt.Sprintf("resuming run %d", id), err)
			}
			if x0 != nil {
				run.Area = &orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}
			}
			return run, nil
		}
		return nil, fmt.Errorf("flow %q: %w (no interrupted or crashed run that no other process holds)", st.Flow, ErrNothingToResume)
	}
	trigger := st.Trigger
	if trigger == "" {
		trigger = "manual"
	}
	var run Run
	err := conn.QueryRow(ctx, `INSERT INTO geoflow_runs (flow, trigger, area, only_tasks, flow_file, scheduled_for)
		VALUES ($1, $2, `+envelopeSQL(3)+`, $7, NULLIF($8, ''), $9) RETURNING id, started_at`,
		append(append([]any{st.Flow, trigger}, envelopeArgs(st.Area)...), st.OnlyTasks, st.FlowFile, st.ScheduledFor)...).Scan(&run.ID, &run.StartedAt)
	if err != nil {
		return nil, translate("recording a new run", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", runLockClass, int32(run.ID)); err != nil {
		return nil, translate("locking the new run", err)
	}
	run.Flow, run.Area, run.OnlyTasks = st.Flow, st.Area, st.OnlyTasks
	return &run, nil
}

// envelopeSQL is the SQL for a lon/lat polygon from four parameters starting at $n, NULL
// when they are NULL.
func envelopeSQL(n int) string {
	return fmt.Sprintf("ST_MakeEnvelope($%d, $%d, $%d, $%d, 4326)", n, n+1, n+2, n+3)
}

func envelopeArgs(b *orb.Bound) []any {
	if b == nil {
		return []any{nil, nil, nil, nil}
	}
	return []any{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
}

// TaskState returns a task's state in a run, or "" when it has no row yet.
func (s *Store) TaskState(ctx context.Context, runID int64, task string) (string, error) {
	var state string
	err := s.pool.QueryRow(ctx, "SELECT state FROM geoflow_run_tasks WHERE run_id = $1 AND task = $2", runID, task).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return state, translate(fmt.Sprintf("reading the state of task %q", task), err)
}

// SetTaskState records a task's state. "running" sets its start time (once); the final
// states set its finish time and roll its units' counts up into it.
func (s *Store) SetTaskState(ctx context.Context, runID int64, task, typ, state, errMsg string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO geoflow_run_tasks (run_id, task, type, state, started_at, error)
		VALUES ($1, $2, $3, $4, CASE WHEN $4 = 'running' THEN now() END, NULLIF($5, ''))
		ON CONFLICT (run_id, task) DO UPDATE SET
			state = EXCLUDED.state,
			type = EXCLUDED.type,
			started_at = CASE WHEN EXCLUDED.state = 'running' THEN now() ELSE geoflow_run_tasks.started_at END,
			finished_at = CASE WHEN EXCLUDED.state IN ('done', 'failed', 'upstream_failed', 'interrupted') THEN now() END,
			error = EXCLUDED.error`, runID, task, typ, state, errMsg)
	if err != nil {
		return translate(fmt.Sprintf("recording task %q as %s", task, state), err)
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE geoflow_run_tasks t SET
			units_total = c.total, units_done = c.done, units_dead = c.dead,
			features_inserted = c.ins, features_skipped = c.skip, features_updated = c.upd, bytes = c.bytes
		FROM (SELECT count(*) AS total,
		             count(*) FILTER (WHERE state = 'done') AS done,
		             count(*) FILTER (WHERE state = 'failed') AS dead,
		             coalesce(sum(features_inserted), 0) AS ins,
		             coalesce(sum(features_skipped), 0) AS skip,
		             coalesce(sum(features_updated), 0) AS upd,
		             coalesce(sum(bytes), 0) AS bytes
		      FROM geoflow_units WHERE run_id = $1 AND task = $2) c
		WHERE t.run_id = $1 AND t.task = $2`, runID, task)
	return translate(fmt.Sprintf("counting the units of task %q", task), err)
}

// AddUnits records planned units as pending. Units already recorded (a resumed run plans
// again) are left as they are.
func (s *Store) AddUnits(ctx context.Context, runID int64, task string, units []tasks.Unit) error {
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

func addUnits(ctx context.Context, q querier, runID int64, task string, units []tasks.Unit) error {
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
		SELECT $1, $2, k, p, CASE WHEN x0 IS NULL THEN NULL ELSE ST_MakeEnvelope(x0, y0, x1, y1, 4326) END, sp::jsonb
		FROM unnest($3::text[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::text[])
		     AS u(k, p, x0, y0, x1, y1, sp)
		ON CONFLICT (run_id, task, key) DO NOTHING`,
		runID, task, keys, parents, minx, miny, maxx, maxy, specs)
	return translate(fmt.Sprintf("recording %d planned units of task %q", len(units), task), err)
}

// OpenUnits returns the units of a task that are not done, in key order: all of them in a
// new run, and what is left in a resumed one.
func (s *Store) OpenUnits(ctx context.Context, runID int64, task string) ([]tasks.Unit, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT key, coalesce(parent_key, ''), ST_XMin(bbox), ST_YMin(bbox), ST_XMax(bbox), ST_YMax(bbox), spec
		FROM geoflow_units WHERE run_id = $1 AND task = $2 AND state <> 'done' ORDER BY key`, runID, task)
	if err != nil {
		return nil, translate(fmt.Sprintf("reading the open units of task %q", task), err)
	}
	var out []tasks.Unit
	var (
		u              tasks.Unit
		x0, y0, x1, y1 *float64
		spec           []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&u.Key, &u.Parent, &x0, &y0, &x1, &y1, &spec}, func() error {
		unit := tasks.Unit{Key: u.Key, Parent: u.Parent}
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

// EndUnit records a unit that did not complete: state is "failed" (it became a dead
// letter) or "interrupted" (shutdown cut it short; a resume runs it again).
func (s *Store) EndUnit(ctx context.Context, ref tasks.UnitRef, state, errMsg string) error {
	_, err := s.pool.Exec(ctx, `UPDATE geoflow_units SET state = $4, finished_at = now(), error = NULLIF($5, ''),
		attempts = attempts + CASE WHEN $6::timestamptz IS NULL THEN 0 ELSE 1 END, started_at = coalesce($6, started_at)
		WHERE run_id = $1 AND task = $2 AND key = $3`, ref.RunID, ref.TaskID, ref.Key, state, errMsg, unitStart(ctx))
	return translate(fmt.Sprintf("recording unit %s of task %q as %s", ref.Key, ref.TaskID, state), err)
}

// unitStart is the start time the runner put in ctx (tasks.WithUnitStart), or nil: the
// statement that records a unit's outcome also counts its attempt and records its start.
func unitStart(ctx context.Context) *time.Time {
	if t, ok := tasks.UnitStart(ctx); ok {
		return &t
	}
	return nil
}

// RunSummary is what a run did, summed over its tasks.
type RunSummary struct {
	ID                                int64
	Flow, Status                      string
	UnitsTotal, UnitsDone, UnitsDead  int64
	Inserted, Skipped, Updated, Bytes int64
	StartedAt                         time.Time
	FinishedAt                        *time.Time
}

// FinishRun records the run's final status and returns its totals.
func (s *Store) FinishRun(ctx context.Context, runID int64, status, errMsg string) (RunSummary, error) {
	var sum RunSummary
	err := s.pool.QueryRow(ctx, `
		WITH c AS (
			SELECT count(*) AS total,
			       count(*) FILTER (WHERE state = 'done') AS done,
			       count(*) FILTER (WHERE state = 'failed') AS dead,
			       coalesce(sum(features_inserted), 0) AS ins,
			       coalesce(sum(features_skipped), 0) AS skip,
			       coalesce(sum(features_updated), 0) AS upd,
			       coalesce(sum(bytes), 0) AS bytes
			FROM geoflow_units WHERE run_id = $1)
		UPDATE geoflow_runs r SET status = $2, finished_at = now(), error = NULLIF($3, ''),
			units_total = c.total, units_done = c.done, units_dead = c.dead,
			features_inserted = c.ins, features_skipped = c.skip, features_updated = c.upd
		FROM c WHERE r.id = $1
		RETURNING r.id, r.flow, r.status, c.total, c.done, c.dead, c.ins, c.skip, c.upd, c.bytes, r.started_at, r.finished_at`,
		runID, status, errMsg).Scan(&sum.ID, &sum.Flow, &sum.Status, &sum.UnitsTotal, &sum.UnitsDone, &sum.UnitsDead,
		&sum.Inserted, &sum.Skipped, &sum.Updated, &sum.Bytes, &sum.StartedAt, &sum.FinishedAt)
	return sum, translate(fmt.Sprintf("finishing run %d", runID), err)
}
