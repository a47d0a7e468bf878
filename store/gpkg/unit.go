package gpkg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/proj"
	"github.com/geoflow/geoflow/store"
)

var _ store.UnitTx = (*unitTx)(nil)

// BeginUnit implements store.Units. The transaction takes the writer only at its first
// statement: a unit's features are decoded and encoded before, while other units write.
func (s *Store) BeginUnit(ctx context.Context, ref store.UnitRef) (store.UnitTx, error) {
	return &unitTx{s: s, ref: ref}, nil
}

// unitTx is one unit's transaction on the writer, begun lazily.
type unitTx struct {
	s     *Store
	ref   store.UnitRef
	conn  *sql.Conn // the writer, held from begin to the end of tx
	tx    *sql.Tx
	added []added   // hashes the transaction added to a deferred index (Rollback undoes them)
	marks []boxMark // where the deferred indexes' boxes stood before the transaction
}

// begin begins the transaction at its first statement, having prepared the statements
// the caller is about to run (see Store.warm).
func (u *unitTx) begin(ctx context.Context, queries ...string) (*sql.Tx, error) {
	if u.tx == nil {
		if err := u.s.warm(ctx, queries...); err != nil {
			return nil, translate(fmt.Sprintf("preparing the statements of unit %s", u.ref.Key), err)
		}
		// On a connection of its own, which the deferred inserts use past database/sql
		// (rawExec); it goes back to the pool when the transaction ends (release).
		conn, err := u.s.w.Conn(ctx)
		if err != nil {
			return nil, translate(fmt.Sprintf("beginning the transaction of unit %s", u.ref.Key), err)
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			conn.Close()
			return nil, translate(fmt.Sprintf("beginning the transaction of unit %s", u.ref.Key), err)
		}
		u.conn, u.tx = conn, tx
	}
	return u.tx, nil
}

// completeSQL marks a unit done with its counts. The counts, requests among them, are
// set, not added: they are what the unit's last execution did.
const completeSQL = `UPDATE geoflow_units SET state = 'done', finished_at = ` + now + `, error = NULL,
	features_inserted = ?, features_skipped = ?, features_updated = ?, bytes = ?, attempts = attempts + 1, started_at = ?,
	features_rejected = ?, features_merged = ?, requests = ?, features_short = ?, features_filtered = ?,
	rows_affected = ?, features_overlap = ?
	WHERE run_id = ? AND task = ? AND key = ?`

// Complete implements store.UnitTx.
func (u *unitTx) Complete(ctx context.Context, c store.Counts, children, failed []store.Unit, start time.Time) error {
	tx, err := u.begin(ctx, completeSQL, addUnitSQL, addExecutionSQL)
	if err != nil {
		return err
	}
	ref := u.ref
	children = append(children[:len(children):len(children)], failed...)
	if len(children) > 0 {
		kids := make([]store.Unit, len(children))
		for i, k := range children {
			k.Parent = ref.Key
			kids[i] = k
		}
		if err := u.s.addUnits(ctx, tx, ref.RunID, ref.TaskID, kids); err != nil {
			return translate(fmt.Sprintf("recording the %d units unit %s planned", len(kids), ref.Key), err)
		}
	}
	st, err := u.s.stmt(ctx, tx, completeSQL)
	if err != nil {
		return translate(fmt.Sprintf("marking unit %s done", ref.Key), err)
	}
	_, err = st.ExecContext(ctx, c.Inserted, c.Skipped, c.Updated, c.Bytes, ts(start), c.Rejected, c.Merged, c.Requests, c.Short, c.Filtered, c.Affected, c.Overlap,
		ref.RunID, ref.TaskID, ref.Key)
	return translate(fmt.Sprintf("marking unit %s done", ref.Key), err)
}

// Commit implements store.UnitTx.
func (u *unitTx) Commit(ctx context.Context) error {
	if u.tx == nil {
		return nil
	}
	err := u.tx.Commit()
	u.release()
	if err != nil {
		undo(u.added, u.marks, false)
	}
	u.added, u.marks = nil, nil
	return translate(fmt.Sprintf("committing unit %s", u.ref.Key), err)
}

// Rollback implements store.UnitTx.
func (u *unitTx) Rollback(ctx context.Context) {
	if u.tx != nil {
		undo(u.added, u.marks, true) // before the writer is released
		_ = u.tx.Rollback()
		u.release()
	}
	u.added, u.marks = nil, nil
}

// release gives the writer back once the transaction has ended.
func (u *unitTx) release() {
	u.tx = nil
	if u.conn != nil {
		_ = u.conn.Close()
		u.conn = nil
	}
}

// featureRow is one feature ready to insert: its values in the order of insertCols.
type featureRow []any

// WriteFeatures implements store.UnitTx. It reads the whole source first, encoding each
// feature as its row (GeoPackage geometry, payload hash, typed values), and only then
// takes the writer: decoding a page costs more than inserting it, and other units write
// meanwhile. A page is bounded (the task's page size), so memory is too. A feature whose
// geometry spatial.Validate refuses is counted as Rejected and left out
// (store.ValidFeatures), as the PostGIS store does.
func (u *unitTx) WriteFeatures(ctx context.Context, t *store.FeatureTable, src store.FeatureSource) (store.Counts, error) {
	valid := &store.ValidFeatures{Src: src}
	c, err := u.writeFeatures(ctx, t, valid)
	c.Rejected += valid.Refused
	return c, err
}

func (u *unitTx) writeFeatures(ctx context.Context, t *store.FeatureTable, src store.FeatureSource) (store.Counts, error) {
	rows, err := readRows(src, t, u.ref.RunID)
	if err != nil || len(rows) == 0 {
		return store.Counts{}, err
	}
	name := tableName(t.Schema, t.Name)
	// The run and the fetch time, one for every row, are cols[sharedLo:sharedHi].
	cols := []string{`"geom"`, `"gf_feature_id"`, `"gf_payload_hash"`, `"gf_run_id"`, `"gf_fetched_at"`}
	for _, c := range t.Columns {
		cols = append(cols, quote(c.Name))
	}
	switch {
	case t.Keyed():
		return u.writeKeyed(ctx, t, name, cols, rows)
	case t.Mode == store.ModeUpsert:
		return u.upsert(ctx, t, name, cols, rows)
	}
	return u.insertNew(ctx, name, cols, rows)
}

// readRows reads the whole of src, encoding each feature as its row (encodeFeature), all
// stamped with one fetch time.
func readRows(src store.FeatureSource, t *store.FeatureTable, runID int64) ([]featureRow, error) {
	// The run and the fetch time are boxed once for every row: two allocations a row.
	run, fetched, srs := any(runID), any(ts(time.Now())), srsID(t.SRID)
	tr, err := writeTransformer(t)
	if err != nil {
		return nil, err
	}
	var rows []featureRow
	var h spatial.Hasher
	pick := t.Picker()
	for {
		f, err := src.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err // the source's own error, unchanged
		}
		row, err := encodeFeature(f, h.Pick(f, pick), pick.Values(), t, tr, srs, run, fetched)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
}

// insertNew inserts the rows whose payload the table does not hold yet, one statement
// each, counting the others skipped; of those, the ones merged into a stored row of
// another feature id are recorded (recordMerged). A table whose payload-hash index is
// deferred (see hashIndex) is checked in memory instead of by the index.
func (u *unitTx) insertNew(ctx context.Context, name string, cols []string, rows []featureRow) (store.Counts, error) {
	what := fmt.Sprintf("inserting into %s", name)
	insert := fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (gf_payload_hash) DO NOTHING`,
		quote(name), strings.Join(cols, ", "), placeholders(len(cols)))
	if x := u.s.deferredIndex(name); x != nil && x.len() >= u.s.maxDeferred && u.tx == nil {
		leaves, err := u.s.buildHashIndex(ctx, name)
		leaves.free() // FinishFeatureTable reads the rows then
		if err != nil {
			return store.Counts{}, err
		}
	}
	x := u.s.deferredIndex(name)
	var queries, warm []string
	if x != nil {
		queries = deferredSQL(name, cols)
		x.prepared(queries)
		warm = queries[1:3] // the lookups: the inserts run past database/sql (rawExec)
	} else {
		queries = []string{insert, lookHashSQL(name)}
		warm = queries
	}
	tx, err := u.begin(ctx, slices.Concat(warm, []string{touchSQL, mergedSQL, indexedSQL})...)
	if err != nil {
		return store.Counts{}, err
	}
	if x != nil {
		if x, err = u.stillDeferred(ctx, tx, name); err != nil {
			return store.Counts{}, translate(what, err)
		}
	}
	var res store.Counts
	var skipped []skippedRow
	if x != nil {
		res, skipped, err = u.insertDeferred(ctx, tx, x, name, cols, queries, rows)
	} else {
		res, skipped, err = u.insertIndexed(ctx, tx, insert, name, rows)
	}
	if err != nil {
		return res, translate(what, err)
	}
	if len(skipped) > 0 {
		res.Merged, res.Overlap, err = u.recordMerged(ctx, tx, skipped)
		if err != nil {
			return res, translate(what, err)
		}
	}
	if res.Inserted > 0 {
		return res, translate(what, u.touch(ctx, tx, name))
	}
	return res, nil
}

// stillDeferred returns table name's deferred index, now that the writer is held: nil if
// another unit built the index, or another process made it (then it is dropped here).
func (u *unitTx) stillDeferred(ctx context.Context, tx *sql.Tx, name string) (*hashIndex, error) {
	x := u.s.deferredIndex(name)
	if x == nil {
		return nil, nil
	}
	st, err := u.s.stmt(ctx, tx, indexedSQL)
	if err != nil {
		return nil, err
	}
	var n int
	if err := st.QueryRowContext(ctx, hashIndexName(name)).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		u.s.dropDeferred(name)
		return nil, nil
	}
	return x, nil
}

// skippedRow is a row not inserted for the payload a stored row has: that row's feature
// id, and whether the unit's run wrote it.
type skippedRow struct {
	row    featureRow
	stored sql.NullString
	ours   bool
}

// lookHashSQL finds the stored row of a payload hash (?1) in table name: its feature id,
// and whether run ?2 wrote it.
func lookHashSQL(name string) string {
	return fmt.Sprintf(`SELECT gf_feature_id, gf_run_id IS ?2 FROM %s WHERE gf_payload_hash = ?1`, quote(name))
}

// insertIndexed inserts rows with insert, whose ON CONFLICT the table's unique index
// decides, and returns the rows it skipped with what their stored rows say.
func (u *unitTx) insertIndexed(ctx context.Context, tx *sql.Tx, insert, name string, rows []featureRow) (res store.Counts, skipped []skippedRow, err error) {
	st, err := u.s.stmt(ctx, tx, insert)
	if err != nil {
		return res, nil, err
	}
	look, err := u.s.stmt(ctx, tx, lookHashSQL(name))
	if err != nil {
		return res, nil, err
	}
	for _, row := range rows {
		r, err := st.ExecContext(ctx, row...)
		if err != nil {
			return res, skipped, err
		}
		if n, _ := r.RowsAffected(); n == 1 {
			res.Inserted++
			continue
		}
		res.Skipped++
		sk := skippedRow{row: row}
		if err := look.QueryRowContext(ctx, row[2], u.ref.RunID).Scan(&sk.stored, &sk.ours); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return res, skipped, err
		}
		skipped = append(skipped, sk)
	}
	return res, skipped, nil
}

// touchSQL records that the rows of table ?1 changed: gpkg_contents.last_change, which
// the GeoPackage standard says to keep current, moves to now, or a millisecond past its
// last value when the clock has not moved on since (two units within a millisecond), so
// that every change moves it and StoredTable's Stamp with it. An insert alone would show
// in the table's count and max(fid) too; an update in place (upsert, mirror) or a closed
// version (history) shows only here.
const touchSQL = `UPDATE gpkg_contents SET last_change = max(` + now + `,
	coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', last_change, '+0.001 seconds'), ` + now + `)) WHERE table_name = ?`

// touch runs touchSQL for table name in the unit's transaction tx.
func (u *unitTx) touch(ctx context.Context, tx *sql.Tx, name string) error {
	st, err := u.s.stmt(ctx, tx, touchSQL)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, name)
	return err
}

// recordMerged records, each once in the run however many tiles deliver it, the ids of
// the skipped rows that were merged into a stored row (merged), and returns how many
// it recorded, and how many of the skipped rows met a row this same run stored (the
// overlaps, store.Counts.Overlap).
func (u *unitTx) recordMerged(ctx context.Context, tx *sql.Tx, skipped []skippedRow) (n, overlap int64, err error) {
	rec, err := u.s.stmt(ctx, tx, mergedSQL)
	if err != nil {
		return 0, 0, err
	}
	for _, sk := range skipped {
		if sk.ours {
			overlap++
		}
		if !merged(sk.row[1], sk.stored) {
			continue
		}
		r, err := rec.ExecContext(ctx, u.ref.RunID, u.ref.TaskID, sk.row[1])
		if err != nil {
			return n, overlap, err
		}
		k, _ := r.RowsAffected()
		n += k
	}
	return n, overlap, nil
}

// merged decides whether a row skipped for its payload, with feature id id (nil or ""
// for none), was merged into the stored row of that payload, whose id is stored: the
// two are distinct features with one payload, which the completeness check counts. A
// feature without an id, or one whose stored row has its id, was merely delivered again.
func merged(id any, stored sql.NullString) bool {
	if id == nil || id == "" {
		return false
	}
	return !stored.Valid || stored.String != id
}

// mergedSQL records a feature id merged into a stored row of another id, once per run.
const mergedSQL = `INSERT INTO geoflow_merged (run_id, task, feature_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`

// upsert writes rows keyed on t.Key: a changed feature updates its row, an unchanged one
// is skipped, a new one inserted. Keys compare with IS, so a NULL key matches a NULL key
// (one row, as NULLS NOT DISTINCT makes it in PostgreSQL).
func (u *unitTx) upsert(ctx context.Context, t *store.FeatureTable, name string, cols []string, rows []featureRow) (store.Counts, error) {
	var res store.Counts
	what := fmt.Sprintf("upserting into %s", name)
	keyIdx := make([]int, len(t.Key))
	var match []string
	for i, k := range t.Key {
		for j, c := range t.Columns {
			if c.Name == k {
				keyIdx[i] = 5 + j
			}
		}
		match = append(match, quote(k)+" IS ?")
	}
	sets := make([]string, len(cols))
	for i, c := range cols {
		sets[i] = c + " = ?"
	}
	updSQL := fmt.Sprintf(`UPDATE %s SET %s WHERE %s AND gf_payload_hash IS NOT ?`,
		quote(name), strings.Join(sets, ", "), strings.Join(match, " AND "))
	insSQL := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s WHERE NOT EXISTS (SELECT 1 FROM %s WHERE %s)`,
		quote(name), strings.Join(cols, ", "), placeholders(len(cols)), quote(name), strings.Join(match, " AND "))
	runSQL := fmt.Sprintf(`SELECT gf_run_id FROM %s WHERE %s`, quote(name), strings.Join(match, " AND "))
	// runSQL costs a lookup per unchanged feature only; a changed or new one is decided
	// by the update and the insert as before.
	tx, err := u.begin(ctx, updSQL, insSQL, touchSQL, runSQL)
	if err != nil {
		return res, err
	}
	upd, err := u.s.stmt(ctx, tx, updSQL)
	if err != nil {
		return res, translate(what, err)
	}
	byRun, err := u.s.stmt(ctx, tx, runSQL)
	if err != nil {
		return res, translate(what, err)
	}
	ins, err := u.s.stmt(ctx, tx, insSQL)
	if err != nil {
		return res, translate(what, err)
	}
	keys := make([]any, len(keyIdx))
	for _, row := range rows {
		for i, j := range keyIdx {
			keys[i] = row[j]
		}
		r, err := upd.ExecContext(ctx, append(append(append([]any{}, row...), keys...), row[2])...)
		if err != nil {
			return res, translate(what, err)
		}
		if n, _ := r.RowsAffected(); n > 0 {
			res.Updated++
			continue
		}
		r, err = ins.ExecContext(ctx, append(append([]any{}, row...), keys...)...)
		if err != nil {
			return res, translate(what, err)
		}
		if n, _ := r.RowsAffected(); n > 0 {
			res.Inserted++
			continue
		}
		res.Skipped++
		if own, err := u.storedByRun(ctx, byRun, keys); err != nil {
			return res, translate(what, err)
		} else if own {
			res.Overlap++
		}
	}
	if res.Inserted+res.Updated > 0 {
		return res, translate(what, u.touch(ctx, tx, name))
	}
	return res, nil
}

// storedByRun tells whether the row st (the table's gf_run_id by key) finds by keys was
// written by the unit's run.
func (u *unitTx) storedByRun(ctx context.Context, st *sql.Stmt, keys []any) (bool, error) {
	var run sql.NullInt64
	if err := st.QueryRowContext(ctx, keys...).Scan(&run); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	return run.Valid && run.Int64 == u.ref.RunID, nil
}

// encodeFeature turns a feature into its row: geometry, id, payload hash, run, time, then
// the properties typed for their columns, and for a keyed table the feature's key
// (store.FeatureKey). hash is f's source hash (spatial.Hasher.Source), of the geometry
// as it arrived, and vals the properties of t's columns in their order (spatial.Picker);
// a non-nil tr converts the geometry stored (target.srs) after.
func encodeFeature(f *spatial.Feature, hash [32]byte, vals []any, t *store.FeatureTable, tr *proj.Transformer, srs int32, runID, fetched any) (featureRow, error) {
	n := 5 + len(t.Columns)
	if t.Keyed() {
		n++
	}
	row := make(featureRow, n)
	if t.Keyed() {
		key, err := store.FeatureKey(f, t, hash)
		if err != nil {
			return nil, err
		}
		row[n-1] = key
	}
	if f.Geometry != nil {
		geom := f.Geometry
		if tr != nil {
			var err error
			if geom, err = tr.Geometry(geom); err != nil {
				return nil, fmt.Errorf("feature %q: reprojecting its geometry: %w", f.ID, err)
			}
		}
		g, err := encodeGeometry(geom, srs)
		if err != nil {
			return nil, fmt.Errorf("feature %q: encoding its geometry: %w", f.ID, err)
		}
		row[0] = g
	}
	if f.ID != "" {
		row[1] = f.ID
	}
	row[2], row[3], row[4] = hash[:], runID, fetched
	for i, c := range t.Columns {
		v := vals[i]
		if v == nil {
			continue
		}
		val, ok := exportAsIs(v, c.Type)
		if !ok {
			var err error
			if val, err = columnValue(v, c.Type); err != nil {
				return nil, &store.PropertyError{FeatureID: f.ID, Property: c.Property, Type: c.Type, Value: fmt.Sprint(v)}
			}
		}
		row[5+i] = val
	}
	return row, nil
}

// srsID is the srs_id a table of EPSG code srid is registered with (spatialRefFor).
func srsID(srid int) int32 {
	ref, _ := spatialRefFor(srid)
	return ref.ID
}

// columnValue is a property as its GeoPackage column stores it: integers, doubles,
// booleans as 0/1, dates as YYYY-MM-DD and times as ISO 8601 UTC (the GeoPackage
// DATETIME form), the rest as text. An empty value is NULL, except in a text column.
func columnValue(v any, t store.ColumnType) (any, error) {
	s, err := store.ColumnText(v, t)
	switch {
	case err != nil:
		return nil, err
	case t == store.TypeText || t == "":
		return s, nil // an empty text stays empty, as in PostGIS
	case s == "":
		return nil, nil
	}
	switch t {
	case store.TypeBigint:
		return strconv.ParseInt(s, 10, 64)
	case store.TypeDouble, store.TypeNumeric:
		return strconv.ParseFloat(s, 64)
	case store.TypeBoolean:
		return s == "true", nil
	case store.TypeDate:
		d, err := parseDate(s)
		if err != nil {
			return nil, err
		}
		return d.Format("2006-01-02"), nil
	case store.TypeTimestamptz:
		d, err := parseDate(s)
		if err != nil {
			return nil, err
		}
		return ts(d), nil
	}
	return s, nil
}

// dateLayouts are what servers send for xsd:date and xsd:dateTime, and what PostgreSQL's
// casts accept of them; a time without a zone is taken as UTC.
var dateLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02Z07:00", "2006-01-02", "2006/01/02",
}

func parseDate(s string) (time.Time, error) {
	for _, l := range dateLayouts {
		if d, err := time.Parse(l, s); err == nil {
			return d, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date", s)
}
