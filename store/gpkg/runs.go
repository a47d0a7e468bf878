package gpkg

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// resumable selects the runs of a flow that --resume may continue, as the PostGIS store
// does: one still marked running (its process died: nobody holds its lock, checked next),
// interrupted, or failed with work left that is neither done nor dead-lettered.
const resumable = `SELECT r.id FROM geoflow_runs r
	WHERE r.flow = ?1 AND (r.status IN ('running', 'interrupted') OR (r.status = 'failed' AND (
		EXISTS (SELECT 1 FROM geoflow_units u WHERE u.run_id = r.id AND u.state <> 'done'
			AND NOT EXISTS (SELECT 1 FROM geoflow_dlq d WHERE d.run_id = u.run_id AND d.task = u.task AND d.unit_key = u.key))
		OR EXISTS (SELECT 1 FROM geoflow_run_tasks t WHERE t.run_id = r.id AND t.state IN ('failed', 'running', 'pending', 'interrupted')
			AND NOT EXISTS (SELECT 1 FROM geoflow_units u WHERE u.run_id = t.run_id AND u.task = t.task AND u.state = 'failed')))))
	AND (?2 = 0 OR r.id = ?2)
	ORDER BY r.id DESC LIMIT 20`

// StartRun implements store.Runs. Besides the run's own lock it takes its flow's: SQLite
// has one writer, so two runs of one flow on one file would only queue behind each other;
// the second is refused at once instead (store.ErrFlowBusy).
func (s *Store) StartRun(ctx context.Context, st store.RunStart) (*store.Run, error) {
	releaseFlow, ok, err := s.locks.try(flowOffset(lockFlows, st.Flow), true)
	if err != nil {
		return nil, fmt.Errorf("starting a run of flow %q: %w", st.Flow, err)
	}
	if !ok {
		return nil, fmt.Errorf("flow %q on %s: %w", st.Flow, s.path, store.ErrFlowBusy)
	}
	run, releaseRun, err := s.startRun(ctx, st)
	if err != nil {
		releaseFlow()
		return nil, err
	}
	run.Release = func() { releaseRun(); releaseFlow() }
	s.reserve() // room to record the run's end on a disk that fills up (see FinishRun)
	return run, nil
}

// adoptable selects run ?2 of flow ?1 while it is recorded running, as the PostGIS store
// does: an adoption takes over only a run whose process is gone.
const adoptable = `SELECT r.id FROM geoflow_runs r WHERE r.flow = ?1 AND r.id = ?2 AND r.status = 'running'`

func (s *Store) startRun(ctx context.Context, st store.RunStart) (*store.Run, func(), error) {
	if st.Resume {
		return s.resumeRun(ctx, st)
	}
	trigger := st.Trigger
	if trigger == "" {
		trigger = store.TriggerManual
	}
	var only any
	if st.OnlyTasks != nil {
		b, err := json.Marshal(st.OnlyTasks)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the tasks of a new run: %w", err)
		}
		only = string(b)
	}
	run := &store.Run{Flow: st.Flow, Area: st.Area, OnlyTasks: st.OnlyTasks,
		FlowFile: st.FlowFile, FlowText: st.FlowText, FlowHash: st.FlowHash}
	err := s.w.QueryRowContext(ctx, `INSERT INTO geoflow_runs (flow, trigger, area_min_x, area_min_y, area_max_x, area_max_y,
			only_tasks, flow_file, scheduled_for, flow_text, flow_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, NULLIF(?, ''), NULLIF(?, '')) RETURNING id, started_at`,
		append(append([]any{st.Flow, trigger}, boxArgs(st.Area)...), only, st.FlowFile, tsOrNil(st.ScheduledFor), st.FlowText, st.FlowHash)...).
		Scan(&run.ID, reqTime{&run.StartedAt})
	if err != nil {
		return nil, nil, translate("recording a new run", err)
	}
	release, ok, err := s.locks.try(lockRunBase+run.ID, true)
	if err == nil && !ok {
		err = fmt.Errorf("run %d: %w", run.ID, store.ErrRunBusy) // a file copied while in use
	}
	if err != nil {
		// Not left "running", where a resume would take it for a crashed run.
		_, _ = s.w.ExecContext(context.WithoutCancel(ctx), `UPDATE geoflow_runs SET status = 'failed', finished_at = `+now+`,
			error = ? WHERE id = ?`, "could not be locked: "+err.Error(), run.ID)
		return nil, nil, fmt.Errorf("locking the new run: %w", err)
	}
	return run, release, nil
}

// resumeRun takes over the latest run st selects that no other process holds. Its status
// is read again once its lock is held: a run that ended between the two is not taken.
func (s *Store) resumeRun(ctx context.Context, st store.RunStart) (*store.Run, func(), error) {
	query := resumable
	if st.AdoptedBy != "" {
		query = adoptable
	}
	ids, err := s.ids(ctx, query, st.Flow, st.RunID)
	if err != nil {
		return nil, nil, translate("finding a run to resume", err)
	}
	for _, id := range ids {
		release, ok, err := s.locks.try(lockRunBase+id, true)
		if err != nil {
			return nil, nil, fmt.Errorf("locking run %d: %w", id, err)
		}
		if !ok {
			continue // still running in another process
		}
		run, err := s.resume(ctx, id, st)
		switch {
		case err != nil:
			release()
			return nil, nil, err
		case run != nil:
			return run, release, nil
		}
		release() // it ended meanwhile
	}
	return nil, nil, store.NothingToResume(st)
}

// resume takes over run id when it is still in a status st may take over (else it
// returns nil, nil): it is running again, recording who adopted it (or nobody), and its
// units that a crash or a lost store left failed without a dead letter run again.
func (s *Store) resume(ctx context.Context, id int64, st store.RunStart) (*store.Run, error) {
	run := &store.Run{ID: id, Flow: st.Flow, Resumed: true}
	var area box
	var only sql.NullString
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE geoflow_runs SET status = 'running', finished_at = NULL, error = NULL,
				finished_by = NULLIF(?2, ''), adopted_at = CASE WHEN ?2 <> '' THEN `+now+` END
			WHERE id = ?1 AND status IN ('running', 'interrupted', 'failed') AND (?2 = '' OR status = 'running')
			RETURNING started_at, area_min_x, area_min_y, area_max_x, area_max_y, only_tasks,
				coalesce(flow_file, ''), coalesce(flow_text, ''), coalesce(flow_hash, '')`, id, st.AdoptedBy).
			Scan(append([]any{reqTime{&run.StartedAt}}, append(area.dest(), &only, &run.FlowFile, &run.FlowText, &run.FlowHash)...)...)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE geoflow_units SET state = 'pending' WHERE run_id = ? AND state IN ('failed', 'interrupted', 'running')
			AND NOT EXISTS (SELECT 1 FROM geoflow_dlq d WHERE d.run_id = geoflow_units.run_id AND d.task = geoflow_units.task AND d.unit_key = geoflow_units.key)`, id)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // it ended meanwhile
	}
	if err != nil {
		return nil, translate(fmt.Sprintf("resuming run %d", id), err)
	}
	run.Area = area.bound()
	if only.Valid {
		if err := json.Unmarshal([]byte(only.String), &run.OnlyTasks); err != nil {
			return nil, fmt.Errorf("resuming run %d: its tasks %q: %w", id, only.String, err)
		}
	}
	return run, nil
}

// ids runs a query returning one integer column.
func (s *Store) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// box scans four nullable lon/lat columns.
type box struct{ x0, y0, x1, y1 sql.NullFloat64 }

func (b *box) dest() []any { return []any{&b.x0, &b.y0, &b.x1, &b.y1} }

func (b *box) bound() *orb.Bound {
	if !b.x0.Valid {
		return nil
	}
	return &orb.Bound{Min: orb.Point{b.x0.Float64, b.y0.Float64}, Max: orb.Point{b.x1.Float64, b.y1.Float64}}
}

func boxArgs(b *orb.Bound) []any {
	if b == nil {
		return []any{nil, nil, nil, nil}
	}
	return []any{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
}

// HoldRun implements store.Runs.
func (s *Store) HoldRun(ctx context.Context, runID int64) (*store.Run, error) {
	release, ok, err := s.locks.try(lockRunBase+runID, true)
	if err != nil {
		return nil, fmt.Errorf("locking run %d: %w", runID, err)
	}
	if !ok {
		return nil, fmt.Errorf("run %d: %w; replay once it has ended", runID, store.ErrRunBusy)
	}
	return &store.Run{ID: runID, Release: release}, nil
}

// RunInfo implements store.Runs.
func (s *Store) RunInfo(ctx context.Context, runID int64) (store.RunInfo, error) {
	ri := store.RunInfo{ID: runID}
	var area box
	err := s.r.QueryRowContext(ctx, `SELECT flow, coalesce(flow_file, ''), status, area_min_x, area_min_y, area_max_x, area_max_y,
		coalesce(flow_text, ''), coalesce(flow_hash, '') FROM geoflow_runs WHERE id = ?`, runID).
		Scan(append(append([]any{&ri.Flow, &ri.FlowFile, &ri.Status}, area.dest()...), &ri.FlowText, &ri.FlowHash)...)
	if err != nil {
		return ri, translate(fmt.Sprintf("reading run %d", runID), err)
	}
	ri.Area = area.bound()
	return ri, nil
}

// TaskState implements store.Runs.
func (s *Store) TaskState(ctx context.Context, runID int64, task string) (store.State, error) {
	var state store.State
	err := s.r.QueryRowContext(ctx, "SELECT state FROM geoflow_run_tasks WHERE run_id = ? AND task = ?", runID, task).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Pending, nil
	}
	return state, translate(fmt.Sprintf("reading the state of task %q", task), err)
}

// unitTotals sums units' counts: total, done, dead and features; the caller adds the
// WHERE clause.
const unitTotals = `SELECT count(*), count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'failed'),
	coalesce(sum(features_inserted), 0), coalesce(sum(features_skipped), 0), coalesce(sum(features_updated), 0),
	coalesce(sum(bytes), 0), coalesce(sum(features_rejected), 0), coalesce(sum(features_merged), 0) FROM geoflow_units `

// SetTaskState implements store.Runs: "running" sets the task's start time; the final
// states set its finish time and roll its units' counts up into it.
func (s *Store) SetTaskState(ctx context.Context, runID int64, task, typ string, state store.State, errMsg string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO geoflow_run_tasks (run_id, task, type, state, started_at, error)
			VALUES (?1, ?2, ?3, ?4, CASE WHEN ?4 = 'running' THEN `+now+` END, NULLIF(?5, ''))
			ON CONFLICT (run_id, task) DO UPDATE SET
				state = excluded.state,
				type = excluded.type,
				started_at = CASE WHEN excluded.state = 'running' THEN `+now+` ELSE geoflow_run_tasks.started_at END,
				finished_at = CASE WHEN excluded.state IN ('done', 'incomplete', 'failed', 'upstream_failed', 'interrupted') THEN `+now+` END,
				error = excluded.error`, runID, task, typ, string(state), errMsg); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE geoflow_run_tasks SET (units_total, units_done, units_dead,
				features_inserted, features_skipped, features_updated, bytes, features_rejected, features_merged) =
				(`+unitTotals+` WHERE run_id = ?1 AND task = ?2)
			WHERE run_id = ?1 AND task = ?2`, runID, task)
		return err
	})
	return translate(fmt.Sprintf("recording task %q as %s", task, state), err)
}

// AddUnits implements store.Units.
func (s *Store) AddUnits(ctx context.Context, runID int64, task string, units []store.Unit) error {
	if err := s.warm(ctx, addUnitSQL); err != nil {
		return translate(fmt.Sprintf("recording %d planned units of task %q", len(units), task), err)
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error { return s.addUnits(ctx, tx, runID, task, units) })
	return translate(fmt.Sprintf("recording %d planned units of task %q", len(units), task), err)
}

// addUnitSQL records one planned unit, leaving one already recorded as it is.
const addUnitSQL = `INSERT INTO geoflow_units (run_id, task, key, parent_key, min_x, min_y, max_x, max_y, spec)
	VALUES (?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?) ON CONFLICT (run_id, task, key) DO NOTHING`

func (s *Store) addUnits(ctx context.Context, tx *sql.Tx, runID int64, task string, units []store.Unit) error {
	if len(units) == 0 {
		return nil
	}
	st, err := s.stmt(ctx, tx, addUnitSQL)
	if err != nil {
		return err
	}
	for _, u := range units {
		var spec any
		if len(u.Spec) > 0 {
			spec = string(u.Spec)
		}
		if _, err := st.ExecContext(ctx, append(append([]any{runID, task, u.Key, u.Parent}, boxArgs(u.BBox)...), spec)...); err != nil {
			return err
		}
	}
	return nil
}

// OpenUnits implements store.Units.
func (s *Store) OpenUnits(ctx context.Context, runID int64, task string) ([]store.Unit, error) {
	what := fmt.Sprintf("reading the open units of task %q", task)
	rows, err := s.r.QueryContext(ctx, `SELECT key, coalesce(parent_key, ''), min_x, min_y, max_x, max_y, spec
		FROM geoflow_units WHERE run_id = ? AND task = ? AND state <> 'done' ORDER BY key`, runID, task)
	if err != nil {
		return nil, translate(what, err)
	}
	defer rows.Close()
	var out []store.Unit
	for rows.Next() {
		var u store.Unit
		var b box
		var spec sql.NullString
		if err := rows.Scan(append(append([]any{&u.Key, &u.Parent}, b.dest()...), &spec)...); err != nil {
			return nil, translate(what, err)
		}
		u.BBox = b.bound()
		if spec.Valid {
			u.Spec = json.RawMessage(spec.String)
		}
		out = append(out, u)
	}
	return out, translate(what, rows.Err())
}

// Unit implements store.Units.
func (s *Store) Unit(ctx context.Context, ref store.UnitRef) (store.Unit, store.State, error) {
	u := store.Unit{Key: ref.Key}
	var b box
	var spec sql.NullString
	var state store.State
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(parent_key, ''), min_x, min_y, max_x, max_y, spec, state
		FROM geoflow_units WHERE run_id = ? AND task = ? AND key = ?`, ref.RunID, ref.TaskID, ref.Key).
		Scan(append(append([]any{&u.Parent}, b.dest()...), &spec, &state)...)
	if err != nil {
		return u, "", translate(fmt.Sprintf("reading unit %s of task %q in run %d", ref.Key, ref.TaskID, ref.RunID), err)
	}
	u.BBox = b.bound()
	if spec.Valid {
		u.Spec = json.RawMessage(spec.String)
	}
	return u, state, nil
}

// StartUnit implements store.Units.
func (s *Store) StartUnit(ctx context.Context, ref store.UnitRef) error {
	err := s.execWarm(ctx, startUnitSQL, ref.RunID, ref.TaskID, ref.Key)
	return translate(fmt.Sprintf("recording unit %s of task %q as running", ref.Key, ref.TaskID), err)
}

// startUnitSQL records a unit as running, unless it is done.
const startUnitSQL = `UPDATE geoflow_units SET state = 'running', started_at = ` + now + `
	WHERE run_id = ? AND task = ? AND key = ? AND state <> 'done'`

// EndUnit implements store.Units.
func (s *Store) EndUnit(ctx context.Context, ref store.UnitRef, state store.State, errMsg string) error {
	_, err := s.w.ExecContext(ctx, `UPDATE geoflow_units SET state = ?, finished_at = `+now+`, error = NULLIF(?, ''),
		attempts = attempts + 1 WHERE run_id = ? AND task = ? AND key = ?`, string(state), errMsg, ref.RunID, ref.TaskID, ref.Key)
	return translate(fmt.Sprintf("recording unit %s of task %q as %s", ref.Key, ref.TaskID, state), err)
}

// FinishRun implements store.Runs. Its commit is made durable (synchronous=FULL for this
// one statement flushes the WAL, with every unit committed before it), so a run that
// reported done stays done through an OS crash.
func (s *Store) FinishRun(ctx context.Context, runID int64, status store.State, errMsg string) (store.RunSummary, error) {
	sum, err := s.finishRun(ctx, runID, status, errMsg)
	if diskFull(err) && s.release() {
		// The disk filled up: the reserve StartRun kept makes room for this commit, so
		// that the run reads as it ended (interrupted, resumable), not crashed.
		sum, err = s.finishRun(ctx, runID, status, errMsg)
	}
	if err != nil {
		return sum, err
	}
	if sum.RowsAffected, err = s.runRowsAffected(ctx, runID); err != nil {
		return sum, err
	}
	sum.Hosts, err = s.runHosts(ctx, runID)
	return sum, err
}

func (s *Store) finishRun(ctx context.Context, runID int64, status store.State, errMsg string) (store.RunSummary, error) {
	var sum store.RunSummary
	what := fmt.Sprintf("finishing run %d", runID)
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return sum, translate(what, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
		return sum, translate(what, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = NORMAL") //nolint:errcheck // the next open sets it again
	if status == store.Done {
		// A run that ends done needs its merged ids no more (no replay will recount).
		if _, err := conn.ExecContext(ctx, `DELETE FROM geoflow_merged WHERE run_id = ?`, runID); err != nil {
			return sum, translate(what, err)
		}
	}
	err = conn.QueryRowContext(ctx, `UPDATE geoflow_runs SET status = ?2, finished_at = `+now+`, error = NULLIF(?3, ''),
			(units_total, units_done, units_dead, features_inserted, features_skipped, features_updated,
			 features_rejected, features_merged) =
			(SELECT count(*), count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'failed'),
				coalesce(sum(features_inserted), 0), coalesce(sum(features_skipped), 0), coalesce(sum(features_updated), 0),
				coalesce(sum(features_rejected), 0), coalesce(sum(features_merged), 0)
			 FROM geoflow_units WHERE run_id = ?1)
		WHERE id = ?1
		RETURNING id, flow, status, units_total, units_done, units_dead, features_inserted, features_skipped, features_updated,
			(SELECT coalesce(sum(bytes), 0) FROM geoflow_units WHERE run_id = ?1), started_at, finished_at,
			(SELECT coalesce(sum(features_deleted), 0) FROM geoflow_run_tasks WHERE run_id = ?1),
			(SELECT coalesce(sum(features_filtered), 0) FROM geoflow_units WHERE run_id = ?1),
			(SELECT coalesce(sum(features_overlap), 0) FROM geoflow_units WHERE run_id = ?1)`,
		runID, string(status), errMsg).Scan(&sum.ID, &sum.Flow, &sum.Status, &sum.UnitsTotal, &sum.UnitsDone, &sum.UnitsDead,
		&sum.Inserted, &sum.Skipped, &sum.Updated, &sum.Bytes, reqTime{&sum.StartedAt}, nullTime{&sum.FinishedAt}, &sum.Deleted, &sum.Filtered,
		&sum.Overlap)
	return sum, translate(what, err)
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
