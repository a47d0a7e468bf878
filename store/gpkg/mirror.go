package gpkg

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/geoflow/geoflow/store"
)

var (
	_ store.Mirrors = (*Store)(nil)
	_ store.Changes = (*Store)(nil)
)

// targetName is how the change log names a table: schema.table, as the PostGIS store
// names it, whatever GeoPackage name the table has (tableName).
func targetName(t *store.FeatureTable) string {
	schema := t.Schema
	if schema == "" {
		schema = "public"
	}
	return schema + "." + t.Name
}

// changeSQL records what a unit did to a feature; a feature the run changed before keeps
// its first kind (inserted stays inserted) with the payload written last.
const changeSQL = `INSERT INTO geoflow_changes (run_id, task, target, gf_key, feature_id, change, payload_hash)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (run_id, task, gf_key) DO UPDATE SET payload_hash = excluded.payload_hash, feature_id = excluded.feature_id`

// seenSQL records the keys a unit of a mirror wrote, appended to those it wrote before
// in its transaction (a unit may write more than once).
const seenSQL = `INSERT INTO geoflow_seen (run_id, task, unit, keys) VALUES (?, ?, ?, ?)
	ON CONFLICT (run_id, task, unit) DO UPDATE SET keys = (SELECT json_group_array(value) FROM
		(SELECT value FROM json_each(geoflow_seen.keys) UNION ALL SELECT value FROM json_each(excluded.keys)))`

// writeKeyed writes rows into a keyed table (mirror mode, or history), keyed on gf_key,
// the last element of each row: a feature twice in the rows (tile edges) is written once,
// as it comes last (lastOfEachKey); what happens to it is keyedWriteFor's decision, which
// keyedStmts.write carries out, the two versions of a feature with history stamped with
// one time so that they meet. What changed goes into the change log; a mirror's unit
// also records the keys it saw. Counts are as the PostGIS store reports them: every row
// not inserted or updated, repeats included, is skipped.
func (u *unitTx) writeKeyed(ctx context.Context, t *store.FeatureTable, name string, cols []string, rows []featureRow) (store.Counts, error) {
	var res store.Counts
	what := fmt.Sprintf("writing into %s", name)
	k := len(cols) // gf_key's index in a row
	last, keys := lastOfEachKey(rows, k)
	q := keyedSQL(t, name, cols)
	tx, err := u.begin(ctx, q.all()...)
	if err != nil {
		return res, err
	}
	st, err := u.keyedStmts(ctx, tx, q)
	if err != nil {
		return res, translate(what, err)
	}
	stamp := ts(time.Now()) // taken with the writer: versions follow each other in commit order
	target := targetName(t)
	own := make([]bool, len(rows)) // at a key's last row: this run wrote its row, so its repeats and skips overlap
	for i, row := range rows {
		key := row[k].(string)
		if last[key] != i {
			continue
		}
		var fid int64
		var hash []byte
		var ours bool // the row was written by this run (0 or 1, which costs no allocation)
		err := st.look.QueryRowContext(ctx, key, u.ref.RunID).Scan(&fid, &hash, &ours)
		found := !errors.Is(err, sql.ErrNoRows)
		if found && err != nil {
			return res, translate(what, err)
		}
		w := keyedWriteFor(found, hash, row[2].([]byte), t.History)
		own[i] = w != keyedSkip || ours
		if w == keyedSkip {
			if own[i] {
				res.Overlap++
			}
			continue
		}
		if err := st.write(ctx, w, row, fid, stamp, u.ref.RunID); err != nil {
			return res, translate(what, err)
		}
		kind := store.ChangeUpdated
		if w == keyedInsert {
			kind = store.ChangeInserted
			res.Inserted++
		} else {
			res.Updated++
		}
		if _, err := st.change.ExecContext(ctx, u.ref.RunID, u.ref.TaskID, target, key, row[1], kind, row[2]); err != nil {
			return res, translate(fmt.Sprintf("recording the changes of unit %s", u.ref.Key), err)
		}
	}
	res.Skipped = int64(len(rows)) - res.Inserted - res.Updated
	for i, row := range rows {
		if j := last[row[k].(string)]; j != i && own[j] {
			res.Overlap++ // a repeat in the page
		}
	}
	if res.Inserted+res.Updated > 0 {
		if _, err := st.touch.ExecContext(ctx, name); err != nil {
			return res, translate(what, err)
		}
	}
	if t.Mode == store.ModeMirror {
		b, err := json.Marshal(keys)
		if err != nil {
			return res, fmt.Errorf("encoding the features unit %s saw: %w", u.ref.Key, err)
		}
		if _, err := st.seen.ExecContext(ctx, u.ref.RunID, u.ref.TaskID, u.ref.Key, string(b)); err != nil {
			return res, translate(fmt.Sprintf("recording the features unit %s saw", u.ref.Key), err)
		}
	}
	return res, nil
}

// lastOfEachKey returns, for each key in element k of rows, the index of its last row,
// and the distinct keys in the order of their first row.
func lastOfEachKey(rows []featureRow, k int) (map[string]int, []string) {
	last := make(map[string]int, len(rows))
	var keys []string
	for i, row := range rows {
		key := row[k].(string)
		if _, ok := last[key]; !ok {
			keys = append(keys, key)
		}
		last[key] = i
	}
	return last, keys
}

// keyedWrite is what writeKeyed does with a feature of a keyed table.
type keyedWrite int

const (
	keyedSkip       keyedWrite = iota // unchanged: one lookup, no write
	keyedInsert                       // a new key: its row inserted
	keyedUpdate                       // changed: its row updated in place
	keyedNewVersion                   // changed, with history: the current version closed, a new one inserted
)

// keyedWriteFor decides what to do with a feature whose payload hash is hash, given
// whether its key has a current row (found) and that row's payload hash (stored).
func keyedWriteFor(found bool, stored, hash []byte, history bool) keyedWrite {
	switch {
	case !found:
		return keyedInsert
	case bytes.Equal(stored, hash):
		return keyedSkip
	case history:
		return keyedNewVersion
	}
	return keyedUpdate
}

// keyedQueries are writeKeyed's statements for one table.
type keyedQueries struct {
	look    string // fid and payload hash of a key's current row
	insert  string // a row, gf_key, and with history gf_valid_from
	update  string // in place, or with history the closing of a version
	history bool   // an insert takes gf_valid_from; an update closes a version
	mirror  bool   // the unit records the keys it saw (seenSQL)
}

// all lists the queries to prepare, in the order keyedStmts takes them.
func (q keyedQueries) all() []string {
	queries := []string{q.look, q.insert, q.update, changeSQL, touchSQL}
	if q.mirror {
		queries = append(queries, seenSQL)
	}
	return queries
}

// keyedSQL builds writeKeyed's statements for table t named name whose rows have the
// columns cols, then gf_key.
func keyedSQL(t *store.FeatureTable, name string, cols []string) keyedQueries {
	current := ""
	cols = append(cols[:len(cols):len(cols)], `"gf_key"`)
	if t.History {
		current = " AND gf_valid_to IS NULL"
		cols = append(cols, `"gf_valid_from"`)
	}
	q := keyedQueries{
		look:    fmt.Sprintf(`SELECT fid, gf_payload_hash, gf_run_id IS ?2 FROM %s WHERE gf_key = ?1%s`, quote(name), current),
		insert:  fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, quote(name), strings.Join(cols, ", "), placeholders(len(cols))),
		history: t.History,
		mirror:  t.Mode == store.ModeMirror,
	}
	if t.History {
		q.update = fmt.Sprintf(`UPDATE %s SET gf_valid_to = ?, gf_closed_run = ? WHERE fid = ?`, quote(name))
	} else {
		sets := make([]string, len(cols))
		for i, c := range cols {
			sets[i] = c + " = ?"
		}
		q.update = fmt.Sprintf(`UPDATE %s SET %s WHERE fid = ?`, quote(name), strings.Join(sets, ", "))
	}
	return q
}

// keyedStmts are keyedQueries prepared on the unit's transaction; seen is nil unless
// the table is a mirror.
type keyedStmts struct {
	look, insert, update, change, touch, seen *sql.Stmt
	history                                   bool
}

// keyedStmts prepares q on tx.
func (u *unitTx) keyedStmts(ctx context.Context, tx *sql.Tx, q keyedQueries) (keyedStmts, error) {
	queries := q.all()
	stmts := make([]*sql.Stmt, 6)
	for i, query := range queries {
		var err error
		if stmts[i], err = u.s.stmt(ctx, tx, query); err != nil {
			return keyedStmts{}, err
		}
	}
	return keyedStmts{look: stmts[0], insert: stmts[1], update: stmts[2], change: stmts[3], touch: stmts[4], seen: stmts[5],
		history: q.history}, nil
}

// write carries out w for row, whose key's current row is fid; with history, stamp
// closes the old version and opens the new one, which run closed.
func (s keyedStmts) write(ctx context.Context, w keyedWrite, row featureRow, fid int64, stamp string, run int64) error {
	var err error
	switch {
	case w == keyedUpdate:
		_, err = s.update.ExecContext(ctx, append(append([]any{}, row...), fid)...)
	case w == keyedNewVersion:
		if _, err = s.update.ExecContext(ctx, stamp, run, fid); err == nil {
			_, err = s.insert.ExecContext(ctx, append(append([]any{}, row...), stamp)...)
		}
	case s.history:
		_, err = s.insert.ExecContext(ctx, append(append([]any{}, row...), stamp)...)
	default:
		_, err = s.insert.ExecContext(ctx, row...)
	}
	return err
}

// SeenFeatures implements store.Mirrors.
func (s *Store) SeenFeatures(ctx context.Context, t *store.FeatureTable, runID int64, task string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT count(DISTINCT j.value) FROM geoflow_seen s, json_each(s.keys) j
		WHERE s.run_id = ? AND s.task = ?`, runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the features task %q saw", task), err)
}

// LaterRun implements store.Mirrors.
func (s *Store) LaterRun(ctx context.Context, flow, task string, runID int64) (int64, error) {
	var later sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT max(t.run_id) FROM geoflow_run_tasks t JOIN geoflow_runs r ON r.id = t.run_id
		WHERE r.flow = ? AND t.task = ? AND t.run_id > ? AND t.state NOT IN ('pending', 'upstream_failed')`,
		flow, task, runID).Scan(&later)
	return later.Int64, translate(fmt.Sprintf("looking for a run of task %q after run %d", task, runID), err)
}

// UnseenFeatures implements store.Mirrors, in one transaction on the writer (the
// temporary table of seen keys lives on its connection). The run's seen keys are
// gathered into a temporary table with a key, which the query probes once per current
// row. With an area, the candidates are the rows whose geometry's box overlaps it
// (through the R-tree): the box, not the geometry itself, as PostGIS's ST_Intersects
// would; the area is brought into the table's CRS as CountFeatures does (for a Partial
// query's "wholly inside", the box within its outline: areaWithin), and a CRS
// spatial/proj does not support fails wrapping store.ErrNoTransform for a Partial query.
func (s *Store) UnseenFeatures(ctx context.Context, t *store.FeatureTable, q store.UnseenQuery) (store.Unseen, error) {
	var res store.Unseen
	name := tableName(t.Schema, t.Name)
	what := fmt.Sprintf("listing the features of %s run %d did not see", name, q.RunID)
	area, err := areaIn(t.SRID, q.Area)
	whole := false
	if errors.Is(err, store.ErrNoTransform) && !q.Partial {
		// A full run over a table in a CRS this store cannot bring the area into:
		// every row is in the task's area (the server's extent, or the flow's bbox).
		whole, err = true, nil
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return res, translate(what, err)
	}
	defer func() { _ = tx.Rollback() }() // the temporary table goes with it
	for _, sq := range []string{`DROP TABLE IF EXISTS temp.gf_seen_keys`,
		`CREATE TEMP TABLE gf_seen_keys (k TEXT PRIMARY KEY) WITHOUT ROWID`} {
		if _, err := tx.ExecContext(ctx, sq); err != nil {
			return res, translate(what, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO temp.gf_seen_keys SELECT j.value FROM geoflow_seen s, json_each(s.keys) j
		WHERE s.run_id = ? AND s.task = ?`, q.RunID, q.Task); err != nil {
		return res, translate(what, err)
	}
	inArea := fmt.Sprintf("t.gf_run_id <= %d", q.RunID)
	if t.History {
		inArea += " AND t.gf_valid_to IS NULL"
	}
	// The rail's base: the rows whose box overlaps the area; the candidates: those, or
	// for a --bbox run those whose box lies wholly inside it.
	base, match := inArea, "TRUE"
	var baseArgs, areaArgs []any
	if !whole {
		overlap, args, err := boxMatch(ctx, tx, name, "t", area, false)
		if err != nil {
			return res, translate(what, err)
		}
		base, baseArgs = inArea+" AND "+overlap, args
		match, areaArgs = overlap, args
		if q.Partial {
			// Wholly inside the area: a box within its outline, which in a projected CRS
			// is narrower than the box around it.
			within, err := areaWithin(t.SRID, q.Area)
			if err != nil {
				return res, fmt.Errorf("%s: %w", what, err)
			}
			if match, areaArgs, err = boxMatch(ctx, tx, name, "t", within, true); err != nil {
				return res, translate(what, err)
			}
		}
	}
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s t WHERE %s`, quote(name), base), baseArgs...).Scan(&res.Current); err != nil {
		return res, translate(what, err)
	}
	cond := inArea + " AND " + match + " AND NOT EXISTS (SELECT 1 FROM temp.gf_seen_keys s WHERE s.k = t.gf_key)"
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT t.gf_key, coalesce(t.gf_feature_id, '') FROM %s t WHERE %s ORDER BY t.gf_key`,
		quote(name), cond), areaArgs...)
	if err != nil {
		return res, translate(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f store.UnseenFeature
		if err := rows.Scan(&f.Key, &f.FeatureID); err != nil {
			return res, translate(what, err)
		}
		res.Features = append(res.Features, f)
	}
	if err := rows.Err(); err != nil {
		return res, translate(what, err)
	}
	return res, nil
}

// DeleteFeatures implements store.Mirrors, in one transaction on the writer.
func (s *Store) DeleteFeatures(ctx context.Context, t *store.FeatureTable, d store.DeleteKeys) (int64, error) {
	if len(d.Keys) == 0 {
		return 0, nil
	}
	name := tableName(t.Schema, t.Name)
	what := fmt.Sprintf("deleting %d features from %s for run %d", len(d.Keys), name, d.RunID)
	keys, err := json.Marshal(d.Keys)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	var n int64
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		cond := fmt.Sprintf("t.gf_run_id <= %d", d.RunID)
		if t.History {
			cond += " AND t.gf_valid_to IS NULL"
		}
		cond += " AND t.gf_key IN (SELECT value FROM json_each(?))"
		var err error
		if n, err = s.deleteRows(ctx, tx, t, name, d.RunID, d.Task, cond, []any{string(keys)}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE geoflow_run_tasks SET features_deleted = features_deleted + ? WHERE run_id = ? AND task = ?`,
			n, d.RunID, d.Task); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM geoflow_absent WHERE target = ? AND gf_key IN (SELECT value FROM json_each(?))`,
			targetName(t), string(keys))
		return err
	})
	return n, translate(what, err)
}

// WriteConfirmed implements store.Mirrors, through a unit transaction like any unit's.
func (s *Store) WriteConfirmed(ctx context.Context, ref store.UnitRef, t *store.FeatureTable, src store.FeatureSource) (store.Counts, error) {
	start := time.Now()
	u := &unitTx{s: s, ref: ref}
	defer u.Rollback(ctx)
	tx, err := u.begin(ctx, addUnitSQL)
	if err != nil {
		return store.Counts{}, err
	}
	if err := s.addUnits(ctx, tx, ref.RunID, ref.TaskID, []store.Unit{{Key: ref.Key}}); err != nil {
		return store.Counts{}, translate(fmt.Sprintf("recording unit %s", ref.Key), err)
	}
	c, err := u.WriteFeatures(ctx, t, src)
	if err != nil {
		return c, err
	}
	if err := u.Complete(ctx, c, nil, nil, start); err != nil {
		return c, err
	}
	return c, u.Commit(ctx)
}

// NoteAbsent implements store.Mirrors, in one transaction on the writer.
func (s *Store) NoteAbsent(ctx context.Context, t *store.FeatureTable, a store.Absence) (map[string]int, error) {
	what := fmt.Sprintf("counting the runs features of %s were absent from", targetName(t))
	keys, err := json.Marshal(a.Keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make(map[string]int, len(a.Keys))
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM geoflow_absent WHERE flow = ?1 AND task = ?2 AND target = ?3
			AND EXISTS (SELECT 1 FROM geoflow_absent WHERE flow = ?1 AND task = ?2 AND target = ?3)
			AND gf_key IN (SELECT j.value FROM geoflow_seen s, json_each(s.keys) j WHERE s.run_id = ?4 AND s.task = ?2)`,
			a.Flow, a.Task, targetName(t), a.RunID); err != nil {
			return err
		}
		if len(a.Keys) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO geoflow_absent (flow, task, target, gf_key, runs, last_run)
			SELECT ?1, ?2, ?3, value, 1, ?4 FROM json_each(?5) WHERE TRUE
			ON CONFLICT (flow, task, target, gf_key) DO UPDATE
				SET runs = runs + CASE WHEN last_run < excluded.last_run THEN 1 ELSE 0 END,
				last_run = max(last_run, excluded.last_run)`, a.Flow, a.Task, targetName(t), a.RunID, string(keys)); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT gf_key, runs FROM geoflow_absent WHERE flow = ?1 AND task = ?2 AND target = ?3
			AND gf_key IN (SELECT value FROM json_each(?4))`, a.Flow, a.Task, targetName(t), string(keys))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			out[k] = n
		}
		return rows.Err()
	})
	return out, translate(what, err)
}

// deleteRows deletes (with history, closes) the rows of table name under alias t that
// meet cond, logging each in the change log first: without history with its geometry,
// srs_id and properties, which the table no longer keeps. It returns how many it deleted.
func (s *Store) deleteRows(ctx context.Context, tx *sql.Tx, t *store.FeatureTable, name string, runID int64, task string, cond string, condArgs []any) (int64, error) {
	logArgs := append([]any{runID, task, targetName(t)}, condArgs...)
	var logSQL, delSQL string
	var delArgs []any
	if t.History {
		logSQL = fmt.Sprintf(`INSERT INTO geoflow_changes (run_id, task, target, gf_key, feature_id, change, payload_hash)
			SELECT ?, ?, ?, t.gf_key, t.gf_feature_id, 'deleted', t.gf_payload_hash FROM %s t WHERE %s
			ON CONFLICT (run_id, task, gf_key) DO UPDATE SET change = 'deleted', payload_hash = excluded.payload_hash`, quote(name), cond)
		delSQL = fmt.Sprintf(`UPDATE %s AS t SET gf_valid_to = ?, gf_closed_run = ? WHERE %s`, quote(name), cond)
		delArgs = append([]any{ts(time.Now()), runID}, condArgs...)
	} else {
		cols, err := tableColumns(ctx, tx, name)
		if err != nil {
			return 0, err
		}
		logSQL = fmt.Sprintf(`INSERT INTO geoflow_changes (run_id, task, target, gf_key, feature_id, change, payload_hash, geom, srs_id, properties)
			SELECT ?, ?, ?, t.gf_key, t.gf_feature_id, 'deleted', t.gf_payload_hash, t.geom,
				(SELECT srs_id FROM gpkg_geometry_columns WHERE table_name = %s), %s
			FROM %s t WHERE %s
			ON CONFLICT (run_id, task, gf_key) DO UPDATE SET change = 'deleted', payload_hash = excluded.payload_hash,
				geom = excluded.geom, srs_id = excluded.srs_id, properties = excluded.properties`,
			sqlString(name), propertiesJSON(cols, "t"), quote(name), cond)
		delSQL = fmt.Sprintf(`DELETE FROM %s AS t WHERE %s`, quote(name), cond)
		delArgs = condArgs
	}
	if _, err := tx.ExecContext(ctx, logSQL, logArgs...); err != nil {
		return 0, err
	}
	r, err := tx.ExecContext(ctx, delSQL, delArgs...)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	_, err = tx.ExecContext(ctx, touchSQL, name)
	return n, err
}

// dropSeen forgets the seen keys of d's run and of the flow's earlier runs of the task,
// which can no longer delete anything.
func dropSeen(ctx context.Context, q interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}, flow, task string, before int64) error {
	_, err := q.ExecContext(ctx, `DELETE FROM geoflow_seen WHERE task = ?2 AND run_id < ?1
		AND run_id IN (SELECT id FROM geoflow_runs WHERE flow = ?3)`, before, task, flow)
	return err
}

// ForgetSeen implements store.Mirrors.
func (s *Store) ForgetSeen(ctx context.Context, flow, task string, before int64) error {
	return translate(fmt.Sprintf("forgetting the features earlier runs of task %q saw", task), dropSeen(ctx, s.w, flow, task, before))
}

// NoteChanges implements store.Mirrors.
func (s *Store) NoteChanges(ctx context.Context, runID int64, task string, c store.TaskChanges) error {
	_, err := s.w.ExecContext(ctx, `UPDATE geoflow_run_tasks SET mirror_note = NULLIF(?3, ''),
		versions_closed = CASE WHEN ?4 THEN features_deleted +
			(SELECT coalesce(sum(features_updated), 0) FROM geoflow_units WHERE run_id = ?1 AND task = ?2) ELSE 0 END,
		features_unchanged = CASE WHEN ?5 >= 0 THEN max(?5 - (SELECT coalesce(sum(features_inserted) + sum(features_updated), 0)
			FROM geoflow_units WHERE run_id = ?1 AND task = ?2), 0) END
		WHERE run_id = ?1 AND task = ?2`, runID, task, c.Note, c.History, c.Seen)
	return translate(fmt.Sprintf("recording what task %q changed", task), err)
}

// ListChanges implements store.Changes: the changes of each table in the order of the
// tables' names, then by task, kind and key. With f.Features, geometries of tables in a
// CRS spatial/proj supports come back in lon/lat (SRID 4326); those of other CRSs as
// stored, with their EPSG code (the gpkg srs_id of an SRS that is not EPSG's).
func (s *Store) ListChanges(ctx context.Context, f store.ChangeFilter, fn func(store.Change) error) error {
	what := fmt.Sprintf("reading the changes of run %d", f.RunID)
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT target FROM geoflow_changes WHERE run_id = ?1 AND (?2 = '' OR task = ?2) ORDER BY 1`,
		f.RunID, f.Task)
	if err != nil {
		return translate(what, err)
	}
	var targets []string
	for rows.Next() {
		var tn string
		if err := rows.Scan(&tn); err != nil {
			rows.Close()
			return translate(what, err)
		}
		targets = append(targets, tn)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(what, err)
	}
	for _, tn := range targets {
		if err := s.listChanges(ctx, f, tn, fn); err != nil {
			return err
		}
	}
	return nil
}

// changeOrder orders a table's changes by task, kind (inserted, updated, deleted), key.
const changeOrder = ` ORDER BY c.task, CASE c.change WHEN 'inserted' THEN 0 WHEN 'updated' THEN 1 ELSE 2 END, c.gf_key`

func (s *Store) listChanges(ctx context.Context, f store.ChangeFilter, tn string, fn func(store.Change) error) error {
	what := fmt.Sprintf("reading the changes of run %d to %s", f.RunID, tn)
	if !f.Features {
		return s.listChangeKeys(ctx, f, tn, what, fn)
	}
	schema, table, _ := strings.Cut(tn, ".")
	name := tableName(schema, table)
	cols, err := tableColumns(ctx, s.r, name)
	if err != nil {
		return translate(what, err)
	}
	if len(cols) == 0 {
		return fmt.Errorf("%s: the table %s no longer exists", what, name)
	}
	history := false
	for _, c := range cols {
		history = history || c.name == "gf_valid_to"
	}
	epsg, err := s.epsgCodes(ctx)
	if err != nil {
		return translate(what, err)
	}
	tableSRS := sql.NullInt64{}
	if err := s.r.QueryRowContext(ctx, `SELECT srs_id FROM gpkg_geometry_columns WHERE table_name = ?`, name).Scan(&tableSRS); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return translate(what, err)
	}
	rows, err := s.r.QueryContext(ctx, fmt.Sprintf(`SELECT c.task, c.gf_key, coalesce(c.feature_id, ''), c.change,
			CASE WHEN c.properties IS NOT NULL THEN c.geom ELSE t.geom END,
			coalesce(c.properties, CASE WHEN t.gf_key IS NOT NULL THEN %s END),
			t.gf_key IS NULL AND c.properties IS NULL
		FROM geoflow_changes c LEFT JOIN %s t ON %s
		WHERE c.run_id = ?1 AND c.target = ?2 AND (?3 = '' OR c.task = ?3)`, propertiesJSON(cols, "t"), quote(name), writtenVersion(history))+changeOrder,
		f.RunID, tn, f.Task)
	if err != nil {
		return translate(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		ch := store.Change{RunID: f.RunID, Table: tn}
		var g []byte
		var props sql.NullString
		if err := rows.Scan(&ch.Task, &ch.Key, &ch.FeatureID, &ch.Kind, &g, &props, &ch.Superseded); err != nil {
			return translate(what, err)
		}
		if err := changeFeature(&ch, g, props, tableSRS.Int64, epsg); err != nil {
			return fmt.Errorf("%s: feature %q: %w", what, ch.Key, err)
		}
		if err := fn(ch); err != nil {
			return err
		}
	}
	return translate(what, rows.Err())
}

// listChangeKeys lists the changes of run f.RunID to table tn without their features.
func (s *Store) listChangeKeys(ctx context.Context, f store.ChangeFilter, tn, what string, fn func(store.Change) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT c.task, c.gf_key, coalesce(c.feature_id, ''), c.change FROM geoflow_changes c
			WHERE c.run_id = ?1 AND c.target = ?2 AND (?3 = '' OR c.task = ?3)`+changeOrder, f.RunID, tn, f.Task)
	if err != nil {
		return translate(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		ch := store.Change{RunID: f.RunID, Table: tn}
		if err := rows.Scan(&ch.Task, &ch.Key, &ch.FeatureID, &ch.Kind); err != nil {
			return translate(what, err)
		}
		if err := fn(ch); err != nil {
			return err
		}
	}
	return translate(what, rows.Err())
}

// writtenVersion is the join condition that finds, for a change c, the version of the
// feature the run wrote in table t: with history the one it opened (or, deleted,
// closed); without, the row as it is if its payload is still the one the run wrote (a
// deleted row's copy comes from the log, which has properties).
func writtenVersion(history bool) string {
	if history {
		return `t.gf_key = c.gf_key AND CASE WHEN c.change = 'deleted' THEN t.gf_closed_run = c.run_id
			ELSE t.gf_run_id = c.run_id AND t.gf_payload_hash = c.payload_hash END`
	}
	return "t.gf_key = c.gf_key AND t.gf_payload_hash = c.payload_hash AND c.change <> 'deleted'"
}

// changeFeature fills in ch's feature from the blob g and the properties JSON props: the
// geometry in the SRS of its blob (tableSRS when there is none), named by its EPSG code
// (epsg), Web Mercator brought to lon/lat (changeSRID).
func changeFeature(ch *store.Change, g []byte, props sql.NullString, tableSRS int64, epsg func(int64) int) error {
	srs := tableSRS
	if len(g) > 0 {
		geom, id, err := decodeGeometry(g)
		if err != nil {
			return fmt.Errorf("decoding its geometry: %w", err)
		}
		ch.Geometry, srs = geom, int64(id)
	}
	code := epsg(srs)
	var convert bool
	ch.SRID, convert = changeSRID(code)
	if convert && ch.Geometry != nil {
		g, err := toLonLat(ch.Geometry, code)
		if err != nil {
			return fmt.Errorf("bringing its geometry to lon/lat: %w", err)
		}
		ch.Geometry = g
	}
	if props.Valid {
		if err := json.Unmarshal([]byte(props.String), &ch.Properties); err != nil {
			return fmt.Errorf("decoding its properties: %w", err)
		}
	}
	return nil
}

// changeSRID decides the SRID a change's geometry in EPSG code srid is listed in, and
// whether it must be brought there: lon/lat (4326) for every CRS spatial/proj supports
// (Web Mercator under either of its codes, the UTM zones ...), every other CRS as stored.
func changeSRID(srid int) (int, bool) {
	if srid > 0 && srid != 4326 && canTransform(srid) {
		return 4326, true
	}
	return srid, false
}

// epsgCodes returns a function giving the EPSG code of a gpkg srs_id: its
// organization_coordsys_id when its organization is EPSG, else the srs_id itself.
func (s *Store) epsgCodes(ctx context.Context) (func(srsID int64) int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT srs_id, organization_coordsys_id FROM gpkg_spatial_ref_sys WHERE upper(organization) = 'EPSG'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	codes := map[int64]int{}
	for rows.Next() {
		var id int64
		var code int
		if err := rows.Scan(&id, &code); err != nil {
			return nil, err
		}
		codes[id] = code
	}
	return func(id int64) int {
		if c, ok := codes[id]; ok {
			return c
		}
		return int(id)
	}, rows.Err()
}

// column is a column of a table and its declared type, upper case.
type column struct{ name, typ string }

// querier is what the readers, the writer and a transaction offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// tableColumns returns the property columns of a feature table in their order (none
// when the table does not exist): every column but geoflow's (isBookkeeping).
func tableColumns(ctx context.Context, q querier, name string) ([]column, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, upper(type) FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// propertiesJSON is the SQL for a JSON object of the property columns of the row under
// alias, as the PostGIS store's to_jsonb gives them: booleans as true and false, NULL as
// null; JSON held as text stays text. SQLite takes at most 1000 arguments to a function,
// so past 400 properties the object is built in several calls.
func propertiesJSON(cols []column, alias string) string {
	var props []column
	for _, c := range cols {
		if !isBookkeeping(c.name) {
			props = append(props, c)
		}
	}
	const chunk = 400
	expr := "json_object()"
	for i := 0; i < len(props); i += chunk {
		var args []string
		for _, c := range props[i:min(i+chunk, len(props))] {
			v := alias + "." + quote(c.name)
			if c.typ == "BOOLEAN" {
				v = fmt.Sprintf("json(CASE %s WHEN 1 THEN 'true' WHEN 0 THEN 'false' END)", v)
			}
			label := sqlString(c.name)
			if i > 0 {
				label = sqlString(`$."` + c.name + `"`)
			}
			args = append(args, label, v)
		}
		if i == 0 {
			expr = "json_object(" + strings.Join(args, ", ") + ")"
		} else {
			expr = "json_insert(" + expr + ", " + strings.Join(args, ", ") + ")"
		}
	}
	return expr
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
