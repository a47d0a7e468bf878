package gpkg

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// RecordDeadLetter implements store.DeadLetterSink as the PostGIS store does: the unit's
// failed state and its entry commit together; a unit that fails again updates its entry
// (attempts add up, history is appended, status goes back to open).
func (s *Store) RecordDeadLetter(ctx context.Context, ref store.UnitRef, e dlq.Entry) (int64, error) {
	var id int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
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
	tx, err := u.begin(ctx)
	if err != nil {
		return err
	}
	_, err = recordDeadLetter(ctx, tx, u.ref, e, 0)
	return translate(fmt.Sprintf("recording unit %s of task %q as a dead letter", u.ref.Key, u.ref.TaskID), err)
}

// recordDeadLetter is RecordDeadLetter in tx; attempt is what the unit's attempts grow
// by (0 when Complete counted the attempt already).
func recordDeadLetter(ctx context.Context, tx *sql.Tx, ref store.UnitRef, e dlq.Entry, attempt int) (int64, error) {
	e = e.Redacted()
	hist, err := json.Marshal(nonNil(e.History))
	if err != nil {
		return 0, fmt.Errorf("encoding the replay history of unit %s: %w", ref.Key, err)
	}
	var id int64
	err = func() error {
		if _, err := tx.ExecContext(ctx, `UPDATE geoflow_units SET state = 'failed', finished_at = `+now+`, error = NULLIF(?, ''),
			attempts = attempts + ? WHERE run_id = ? AND task = ? AND key = ?`, e.Error, attempt, ref.RunID, ref.TaskID, ref.Key); err != nil {
			return err
		}
		args := append([]any{e.Flow, ref.TaskID, ref.RunID, ref.Key}, boxArgs(e.BBox)...)
		args = append(args, e.Request.Method, e.Request.URL, e.Request.Body, string(e.Class), e.Error,
			e.HTTPStatus, e.Snippet, max(e.Attempts, 1), string(hist))
		return tx.QueryRowContext(ctx, `
			INSERT INTO geoflow_dlq AS d (flow, task, run_id, unit_key, min_x, min_y, max_x, max_y,
				request_method, request_url, request_body, error_class, error, http_status, response_snippet,
				attempts, replay_history)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), NULLIF(?, ''), ?, ?, NULLIF(?, 0), NULLIF(?, ''), ?, ?)
			ON CONFLICT (run_id, task, unit_key) DO UPDATE SET
				flow = excluded.flow,
				min_x = coalesce(excluded.min_x, d.min_x), min_y = coalesce(excluded.min_y, d.min_y),
				max_x = coalesce(excluded.max_x, d.max_x), max_y = coalesce(excluded.max_y, d.max_y),
				request_method = excluded.request_method,
				request_url = excluded.request_url,
				request_body = excluded.request_body,
				error_class = excluded.error_class,
				error = excluded.error,
				http_status = excluded.http_status,
				response_snippet = excluded.response_snippet,
				attempts = d.attempts + excluded.attempts,
				last_failed_at = excluded.last_failed_at,
				status = 'open',
				replay_history = (SELECT json_group_array(json(value)) FROM (
					SELECT 0 AS part, key, value FROM json_each(d.replay_history)
					UNION ALL SELECT 1, key, value FROM json_each(excluded.replay_history) ORDER BY 1, 2))
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

const dlqColumns = `id, flow, task, run_id, unit_key, min_x, min_y, max_x, max_y,
	coalesce(request_method, ''), coalesce(request_url, ''), coalesce(request_body, ''),
	error_class, error, coalesce(http_status, 0), coalesce(response_snippet, ''), attempts,
	first_failed_at, last_failed_at, status, replay_history`

func scanEntry(rows *sql.Rows) (dlq.Entry, error) {
	var (
		e             dlq.Entry
		b             box
		class, status string
		hist          string
	)
	err := rows.Scan(append(append([]any{&e.ID, &e.Flow, &e.Task, &e.RunID, &e.Unit}, b.dest()...),
		&e.Request.Method, &e.Request.URL, &e.Request.Body, &class, &e.Error, &e.HTTPStatus, &e.Snippet,
		&e.Attempts, reqTime{&e.FirstFailedAt}, reqTime{&e.LastFailedAt}, &status, &hist)...)
	if err != nil {
		return e, err
	}
	e.BBox = b.bound()
	e.Class, e.Status = dlq.Class(class), dlq.Status(status)
	if err := json.Unmarshal([]byte(hist), &e.History); err != nil {
		return e, fmt.Errorf("decoding the replay history of dead letter %d: %w", e.ID, err)
	}
	return e, nil
}

// where turns a filter into a WHERE clause (with its leading keyword, or "") and its
// parameters.
func where(f dlq.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v ...any) {
		conds = append(conds, cond)
		args = append(args, v...)
	}
	if len(f.IDs) > 0 {
		ids, _ := json.Marshal(f.IDs)
		add("id IN (SELECT value FROM json_each(?))", string(ids))
	}
	if f.Flow != "" {
		add("flow = ?", f.Flow)
	}
	if f.Task != "" {
		add("task = ?", f.Task)
	}
	if f.RunID != 0 {
		add("run_id = ?", f.RunID)
	}
	if f.Class != "" {
		add("error_class = ?", string(f.Class))
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if !f.Since.IsZero() {
		add("last_failed_at >= ?", ts(f.Since))
	}
	if !f.Before.IsZero() {
		add("last_failed_at < ?", ts(f.Before))
	}
	if f.Host != "" {
		host := strings.ToLower(f.Host)
		if host == dlq.NoHost {
			host = ""
		}
		add("gf_url_host(request_url) = ?", host)
	}
	if b := f.BBox; b != nil {
		add("min_x <= ? AND max_x >= ? AND min_y <= ? AND max_y >= ?", b.Max[0], b.Min[0], b.Max[1], b.Min[1])
	}
	if len(conds) == 0 {
		return "", nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args
}

// ListDeadLetters implements store.DeadLetters.
func (s *Store) ListDeadLetters(ctx context.Context, f dlq.Filter) ([]dlq.Entry, error) {
	w, args := where(f)
	q := "SELECT " + dlqColumns + " FROM geoflow_dlq " + w + " ORDER BY id"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return s.entries(ctx, "listing dead letters", q, args...)
}

func (s *Store) entries(ctx context.Context, what, q string, args ...any) ([]dlq.Entry, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, translate(what, err)
	}
	defer rows.Close()
	var out []dlq.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, translate(what, err)
		}
		out = append(out, e)
	}
	return out, translate(what, rows.Err())
}

// GetDeadLetter implements store.DeadLetters.
func (s *Store) GetDeadLetter(ctx context.Context, id int64) (dlq.Entry, error) {
	es, err := s.entries(ctx, fmt.Sprintf("reading dead letter %d", id), "SELECT "+dlqColumns+" FROM geoflow_dlq WHERE id = ?", id)
	if err != nil {
		return dlq.Entry{}, err
	}
	if len(es) == 0 {
		return dlq.Entry{}, fmt.Errorf("dead letter %d: %w", id, dlq.ErrNotFound)
	}
	return es[0], nil
}

// DeadLetterStats implements store.DeadLetters.
func (s *Store) DeadLetterStats(ctx context.Context, f dlq.Filter) ([]dlq.StatsRow, error) {
	w, args := where(f)
	rows, err := s.r.QueryContext(ctx, `SELECT error_class, task, gf_url_host(request_url), status, count(*)
		FROM geoflow_dlq `+w+` GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`, args...)
	if err != nil {
		return nil, translate("counting dead letters", err)
	}
	defer rows.Close()
	var out []dlq.StatsRow
	for rows.Next() {
		var r dlq.StatsRow
		var class, status string
		if err := rows.Scan(&class, &r.Task, &r.Host, &status, &r.N); err != nil {
			return nil, translate("counting dead letters", err)
		}
		r.Class, r.Status = dlq.Class(class), dlq.Status(status)
		out = append(out, r)
	}
	return out, translate("counting dead letters", rows.Err())
}

// DeadLetterCounts implements store.DeadLetterSink.
func (s *Store) DeadLetterCounts(ctx context.Context, runID int64) (map[dlq.Class]int64, error) {
	what := fmt.Sprintf("counting the dead letters of run %d", runID)
	rows, err := s.r.QueryContext(ctx, `SELECT error_class, count(*) FROM geoflow_dlq WHERE run_id = ? AND status = 'open' GROUP BY 1`, runID)
	if err != nil {
		return nil, translate(what, err)
	}
	defer rows.Close()
	out := map[dlq.Class]int64{}
	for rows.Next() {
		var class string
		var n int64
		if err := rows.Scan(&class, &n); err != nil {
			return nil, translate(what, err)
		}
		out[dlq.Class(class)] = n
	}
	return out, translate(what, rows.Err())
}

// MarkReplayed implements store.DeadLetters.
func (s *Store) MarkReplayed(ctx context.Context, id int64, item dlq.ReplayItem) error {
	b, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("encoding the replay of dead letter %d: %w", id, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE geoflow_dlq SET status = 'replayed', replay_history = json_insert(replay_history, '$[#]', json(?))
		WHERE id = ?`, string(b), id)
	if err != nil {
		return translate(fmt.Sprintf("marking dead letter %d replayed", id), err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("marking dead letter %d replayed: %w", id, dlq.ErrNotFound)
	}
	return nil
}

// DiscardDeadLetters implements store.DeadLetters.
func (s *Store) DiscardDeadLetters(ctx context.Context, ids []int64) ([]int64, error) {
	b, _ := json.Marshal(ids)
	rows, err := s.w.QueryContext(ctx, `UPDATE geoflow_dlq SET status = 'discarded'
		WHERE id IN (SELECT value FROM json_each(?)) AND status = 'open' RETURNING id`, string(b))
	if err != nil {
		return nil, translate("discarding dead letters", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, translate("discarding dead letters", err)
		}
		out = append(out, id)
	}
	return out, translate("discarding dead letters", rows.Err())
}

// PurgeDeadLetters implements store.DeadLetters. A zero before is refused: purging
// everything takes an explicit time.
func (s *Store) PurgeDeadLetters(ctx context.Context, before time.Time, statuses ...dlq.Status) (int64, error) {
	if before.IsZero() {
		return 0, errors.New("gpkg: purging dead letters needs a time to purge before")
	}
	if len(statuses) == 0 {
		statuses = dlq.Statuses()
	}
	st, _ := json.Marshal(statuses)
	res, err := s.w.ExecContext(ctx, `DELETE FROM geoflow_dlq WHERE last_failed_at < ? AND status IN (SELECT value FROM json_each(?))`,
		ts(before), string(st))
	if err != nil {
		return 0, translate("purging dead letters", err)
	}
	return res.RowsAffected()
}

// CloseDeadLetters implements store.DeadLetterSink.
func (s *Store) CloseDeadLetters(ctx context.Context, runID int64) (int64, error) {
	res, err := s.w.ExecContext(ctx, `
		UPDATE geoflow_dlq SET status = 'replayed',
			replay_history = json_insert(replay_history, '$[#]', json_object('at', `+now+`, 'result', 'replayed', 'error', 'done by a resumed run'))
		WHERE run_id = ?1 AND status = 'open' AND EXISTS (SELECT 1 FROM geoflow_units u
			WHERE u.run_id = geoflow_dlq.run_id AND u.task = geoflow_dlq.task AND u.key = geoflow_dlq.unit_key AND u.state = 'done')`, runID)
	if err != nil {
		return 0, translate(fmt.Sprintf("closing the dead letters of run %d", runID), err)
	}
	return res.RowsAffected()
}
