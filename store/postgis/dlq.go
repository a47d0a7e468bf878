package postgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// RecordDeadLetter marks a unit failed and records it in the dead-letter table, in one
// transaction, so a unit is never failed without an entry nor an entry left for a unit
// that is done. The entry is keyed by (run, task, unit): a unit that fails again (a
// failed replay, a resumed run) updates its entry: the failure fields are replaced,
// attempts add up, first_failed_at is kept, status goes back to open and e.History is
// appended to the entry's history. ref names the unit; e's own RunID, Task and Unit are
// ignored. e is redacted again before it is stored. It returns the entry's id.
func (s *Store) RecordDeadLetter(ctx context.Context, ref store.UnitRef, e dlq.Entry) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := holdTake(ctx, tx, ref); err != nil {
			return err // a worker's unit taken back: another records its outcome
		}
		var err error
		id, err = recordDeadLetter(ctx, tx, ref, e, 1)
		return err
	})
	if err != nil {
		return 0, translate(fmt.Sprintf("recording unit %s of task %q as a dead letter", ref.Key, ref.TaskID), err)
	}
	return id, nil
}

// Fail implements store.UnitTx: the unit, completed in this transaction, is failed with
// its dead letter instead, committing with its output.
func (u *unitTx) Fail(ctx context.Context, e dlq.Entry) error {
	if err := u.flush(ctx); err != nil { // Complete's update of the same row first
		return err
	}
	_, err := recordDeadLetter(ctx, u.tx, u.ref, e, 0)
	return translate(fmt.Sprintf("recording unit %s of task %q as a dead letter", u.ref.Key, u.ref.TaskID), err)
}

// recordDeadLetter is RecordDeadLetter in tx; attempt is what the unit's attempts grow
// by (0 when Complete counted the attempt already).
func recordDeadLetter(ctx context.Context, tx pgx.Tx, ref store.UnitRef, e dlq.Entry, attempt int) (int64, error) {
	e = e.Redacted()
	hist, err := json.Marshal(nonNil(e.History))
	if err != nil {
		return 0, fmt.Errorf("encoding the replay history of unit %s: %w", ref.Key, err)
	}
	var id int64
	err = func() error {
		if _, err := tx.Exec(ctx, `UPDATE geoflow_units SET state = 'failed', finished_at = now(), error = NULLIF($4, ''),
			attempts = attempts + $5
			WHERE run_id = $1 AND task = $2 AND key = $3`, ref.RunID, ref.TaskID, ref.Key, e.Error, attempt); err != nil {
			return err
		}
		args := append([]any{e.Flow, ref.TaskID, ref.RunID, ref.Key}, envelopeArgs(e.BBox)...)
		args = append(args, e.Request.Method, e.Request.URL, e.Request.Body, string(e.Class), e.Error,
			e.HTTPStatus, e.Snippet, max(e.Attempts, 1), string(hist))
		return tx.QueryRow(ctx, `
			INSERT INTO geoflow_dlq AS d (flow, task, run_id, unit_key, bbox,
				request_method, request_url, request_body, error_class, error, http_status, response_snippet,
				attempts, replay_history)
			VALUES ($1, $2, $3, $4, CASE WHEN $5::float8 IS NULL THEN NULL ELSE `+envelopeSQL(5)+` END,
				NULLIF($9, ''), NULLIF($10, ''), NULLIF($11, ''), $12, $13, NULLIF($14, 0), NULLIF($15, ''),
				$16, $17::jsonb)
			ON CONFLICT (run_id, task, unit_key) DO UPDATE SET
				flow = EXCLUDED.flow,
				bbox = coalesce(EXCLUDED.bbox, d.bbox),
				request_method = EXCLUDED.request_method,
				request_url = EXCLUDED.request_url,
				request_body = EXCLUDED.request_body,
				error_class = EXCLUDED.error_class,
				error = EXCLUDED.error,
				http_status = EXCLUDED.http_status,
				response_snippet = EXCLUDED.response_snippet,
				attempts = d.attempts + EXCLUDED.attempts,
				last_failed_at = EXCLUDED.last_failed_at,
				status = 'open',
				replay_history = d.replay_history || EXCLUDED.replay_history
			RETURNING id`, args...).Scan(&id)
	}()
	return id, err
}

func nonNil(h []dlq.ReplayItem) []dlq.ReplayItem {
	if h == nil {
		return []dlq.ReplayItem{}
	}
	return h
}

// dlqColumns are the columns scanEntry reads, in its order.
const dlqColumns = `id, flow, task, run_id, unit_key,
	ST_XMin(ST_GeomFromEWKB(bbox)), ST_YMin(ST_GeomFromEWKB(bbox)), ST_XMax(ST_GeomFromEWKB(bbox)), ST_YMax(ST_GeomFromEWKB(bbox)),
	coalesce(request_method, ''), coalesce(request_url, ''), coalesce(request_body, ''),
	error_class, error, coalesce(http_status, 0), coalesce(response_snippet, ''), attempts,
	first_failed_at, last_failed_at, status, replay_history`

func scanEntry(row pgx.CollectableRow) (dlq.Entry, error) {
	var (
		e              dlq.Entry
		x0, y0, x1, y1 *float64
		class, status  string
		hist           []byte
	)
	err := row.Scan(&e.ID, &e.Flow, &e.Task, &e.RunID, &e.Unit, &x0, &y0, &x1, &y1,
		&e.Request.Method, &e.Request.URL, &e.Request.Body, &class, &e.Error, &e.HTTPStatus, &e.Snippet,
		&e.Attempts, &e.FirstFailedAt, &e.LastFailedAt, &status, &hist)
	if err != nil {
		return e, err
	}
	if x0 != nil {
		e.BBox = &orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}
	}
	e.Class, e.Status = dlq.Class(class), dlq.Status(status)
	if err := json.Unmarshal(hist, &e.History); err != nil {
		return e, fmt.Errorf("decoding the replay history of dead letter %d: %w", e.ID, err)
	}
	return e, nil
}

// hostExpr is the host[:port] of an entry's request URL, lower-cased; empty when the
// entry made no request.
const hostExpr = `lower(coalesce(substring(request_url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)'), ''))`

// where turns a filter into a WHERE clause (with its leading keyword, or "") and its
// parameters, numbered from $1.
func where(f dlq.Filter) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(f.IDs) > 0 {
		conds = append(conds, "id = ANY("+arg(f.IDs)+")")
	}
	if f.Flow != "" {
		conds = append(conds, "flow = "+arg(f.Flow))
	}
	if f.Task != "" {
		conds = append(conds, "task = "+arg(f.Task))
	}
	if f.RunID != 0 {
		conds = append(conds, "run_id = "+arg(f.RunID))
	}
	if f.Class != "" {
		conds = append(conds, "error_class = "+arg(string(f.Class)))
	}
	if f.Status != "" {
		conds = append(conds, "status = "+arg(string(f.Status)))
	}
	if !f.Since.IsZero() {
		conds = append(conds, "last_failed_at >= "+arg(f.Since))
	}
	if !f.Before.IsZero() {
		conds = append(conds, "last_failed_at < "+arg(f.Before))
	}
	if f.Host != "" {
		host := strings.ToLower(f.Host)
		if host == dlq.NoHost {
			host = ""
		}
		conds = append(conds, hostExpr+" = "+arg(host))
	}
	if b := f.BBox; b != nil {
		// ST_Intersects uses the gist index on the decoded bbox by itself.
		conds = append(conds, fmt.Sprintf("ST_Intersects(ST_GeomFromEWKB(bbox), ST_MakeEnvelope(%s, %s, %s, %s, 4326))",
			arg(b.Min[0]), arg(b.Min[1]), arg(b.Max[0]), arg(b.Max[1])))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args
}

// ListDeadLetters returns the entries f selects, oldest id first.
func (s *Store) ListDeadLetters(ctx context.Context, f dlq.Filter) ([]dlq.Entry, error) {
	w, args := where(f)
	q := "SELECT " + dlqColumns + " FROM geoflow_dlq " + w + " ORDER BY id"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, translate("listing dead letters", err)
	}
	out, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, translate("listing dead letters", err)
	}
	return out, nil
}

// GetDeadLetter returns the entry with id, or an error wrapping dlq.ErrNotFound.
func (s *Store) GetDeadLetter(ctx context.Context, id int64) (dlq.Entry, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+dlqColumns+" FROM geoflow_dlq WHERE id = $1", id)
	if err != nil {
		return dlq.Entry{}, translate(fmt.Sprintf("reading dead letter %d", id), err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEntry)
	if errors.Is(err, pgx.ErrNoRows) {
		return dlq.Entry{}, fmt.Errorf("dead letter %d: %w", id, dlq.ErrNotFound)
	}
	if err != nil {
		return dlq.Entry{}, translate(fmt.Sprintf("reading dead letter %d", id), err)
	}
	return e, nil
}

// DeadLetterStats counts the entries f selects by class, task, request host and status.
func (s *Store) DeadLetterStats(ctx context.Context, f dlq.Filter) ([]dlq.StatsRow, error) {
	w, args := where(f)
	rows, err := s.pool.Query(ctx, `
		SELECT error_class, task,
		       `+hostExpr+`,
		       status, count(*)
		FROM geoflow_dlq `+w+` GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`, args...)
	if err != nil {
		return nil, translate("counting dead letters", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dlq.StatsRow, error) {
		var r dlq.StatsRow
		var class, status string
		err := row.Scan(&class, &r.Task, &r.Host, &status, &r.N)
		r.Class, r.Status = dlq.Class(class), dlq.Status(status)
		return r, err
	})
	return out, translate("counting dead letters", err)
}

// DeadLetterCounts returns the number of open entries of a run by class, for the line a
// run ends with.
func (s *Store) DeadLetterCounts(ctx context.Context, runID int64) (map[dlq.Class]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT error_class, count(*) FROM geoflow_dlq
		WHERE run_id = $1 AND status = 'open' GROUP BY 1`, runID)
	if err != nil {
		return nil, translate(fmt.Sprintf("counting the dead letters of run %d", runID), err)
	}
	out := map[dlq.Class]int64{}
	var class string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&class, &n}, func() error {
		out[dlq.Class(class)] = n
		return nil
	})
	return out, translate(fmt.Sprintf("counting the dead letters of run %d", runID), err)
}

// MarkReplayed records a successful replay of entry id: its status becomes replayed and
// item is appended to its history.
func (s *Store) MarkReplayed(ctx context.Context, id int64, item dlq.ReplayItem) error {
	hist, err := json.Marshal([]dlq.ReplayItem{item})
	if err != nil {
		return fmt.Errorf("encoding the replay of dead letter %d: %w", id, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE geoflow_dlq SET status = 'replayed', replay_history = replay_history || $2::jsonb
		WHERE id = $1`, id, string(hist))
	if err != nil {
		return translate(fmt.Sprintf("marking dead letter %d replayed", id), err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("marking dead letter %d replayed: %w", id, dlq.ErrNotFound)
	}
	return nil
}

// DiscardDeadLetters gives up the open entries among ids and returns the ids it
// discarded; ids that do not exist or are not open are left out.
func (s *Store) DiscardDeadLetters(ctx context.Context, ids []int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `UPDATE geoflow_dlq SET status = 'discarded'
		WHERE id = ANY($1) AND status = 'open' RETURNING id`, ids)
	if err != nil {
		return nil, translate("discarding dead letters", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return done, translate("discarding dead letters", err)
}

// PurgeDeadLetters deletes the entries whose last failure is before before and whose
// status is one of statuses (all statuses when none are given), and returns how many it
// deleted. A zero before is refused: purging everything takes an explicit time.
func (s *Store) PurgeDeadLetters(ctx context.Context, before time.Time, statuses ...dlq.Status) (int64, error) {
	if before.IsZero() {
		return 0, errors.New("postgis: purging dead letters needs a time to purge before")
	}
	if len(statuses) == 0 {
		statuses = dlq.Statuses()
	}
	st := make([]string, len(statuses))
	for i, x := range statuses {
		st[i] = string(x)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM geoflow_dlq WHERE last_failed_at < $1 AND status = ANY($2)`, before, st)
	if err != nil {
		return 0, translate("purging dead letters", err)
	}
	return tag.RowsAffected(), nil
}

// CloseDeadLetters marks replayed the open entries of a run whose unit is now done (a
// resumed run executed it again), with a history item saying so, and returns how many.
func (s *Store) CloseDeadLetters(ctx context.Context, runID int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE geoflow_dlq d SET status = 'replayed',
			replay_history = d.replay_history || jsonb_build_array(jsonb_build_object(
				'at', to_jsonb(now()), 'result', 'replayed', 'error', 'done by a resumed run'))
		FROM geoflow_units u
		WHERE d.run_id = $1 AND d.status = 'open'
		  AND u.run_id = d.run_id AND u.task = d.task AND u.key = d.unit_key AND u.state = 'done'`, runID)
	if err != nil {
		return 0, translate(fmt.Sprintf("closing the dead letters of run %d", runID), err)
	}
	return tag.RowsAffected(), nil
}

// RunInfo reads a run, or fails wrapping ErrNotFound.
func (s *Store) RunInfo(ctx context.Context, runID int64) (store.RunInfo, error) {
	ri := store.RunInfo{ID: runID}
	var x0, y0, x1, y1 *float64
	err := s.pool.QueryRow(ctx, `SELECT flow, coalesce(flow_file, ''), status,
		ST_XMin(ST_GeomFromEWKB(area)), ST_YMin(ST_GeomFromEWKB(area)), ST_XMax(ST_GeomFromEWKB(area)), ST_YMax(ST_GeomFromEWKB(area)), coalesce(flow_text, ''), coalesce(flow_hash, ''), distributed
		FROM geoflow_runs WHERE id = $1`, runID).
		Scan(&ri.Flow, &ri.FlowFile, &ri.Status, &x0, &y0, &x1, &y1, &ri.FlowText, &ri.FlowHash, &ri.Distributed)
	if err != nil {
		return ri, translate(fmt.Sprintf("reading run %d", runID), err)
	}
	if x0 != nil {
		ri.Area = &orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}
	}
	return ri, nil
}

// Unit returns a recorded unit (key, parent, bbox and spec, as planned) and its state.
func (s *Store) Unit(ctx context.Context, ref store.UnitRef) (store.Unit, store.State, error) {
	var (
		u              = store.Unit{Key: ref.Key}
		x0, y0, x1, y1 *float64
		spec           []byte
		state          store.State
	)
	err := s.pool.QueryRow(ctx, `SELECT coalesce(parent_key, ''), ST_XMin(ST_GeomFromEWKB(bbox)), ST_YMin(ST_GeomFromEWKB(bbox)), ST_XMax(ST_GeomFromEWKB(bbox)), ST_YMax(ST_GeomFromEWKB(bbox)), spec, state
		FROM geoflow_units WHERE run_id = $1 AND task = $2 AND key = $3`, ref.RunID, ref.TaskID, ref.Key).
		Scan(&u.Parent, &x0, &y0, &x1, &y1, &spec, &state)
	if err != nil {
		return u, "", translate(fmt.Sprintf("reading unit %s of task %q in run %d", ref.Key, ref.TaskID, ref.RunID), err)
	}
	if x0 != nil {
		u.BBox = &orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}
	}
	if len(spec) > 0 {
		u.Spec = json.RawMessage(spec)
	}
	return u, state, nil
}

// HoldRun implements store.Runs: it takes, without waiting, the lock a process holds on a
// run while it executes it, so that a replay never executes units of a run that a resume
// is executing elsewhere.
func (s *Store) HoldRun(ctx context.Context, runID int64) (*store.Run, error) {
	what := fmt.Sprintf("locking run %d", runID)
	conn, err := s.lockConn(ctx, what)
	if err != nil {
		return nil, err
	}
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", runLockClass, int32(runID)).Scan(&locked); err != nil {
		closeConn(conn)()
		return nil, translate(what, err)
	}
	if !locked {
		closeConn(conn)()
		return nil, fmt.Errorf("run %d: %w; replay once it has ended", runID, store.ErrRunBusy)
	}
	return &store.Run{ID: runID, Release: closeConn(conn)}, nil
}
