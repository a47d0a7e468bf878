package gpkg

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// A new table's payload-hash index waits for FinishFeatureTable.
//
// Payload hashes are random, so each feature a harvest inserts lands in a random leaf of
// the table's unique index on gf_payload_hash, and a unit's commit writes every page it
// changed to the WAL whole: once the index outgrows a unit, one 4 KiB page per feature,
// read back and copied again by the checkpoint. On 200,000 parcels written as units of
// 1,000 that index cost half the write path's CPU: 56 µs per feature with it, 28 without,
// and 3.1 s of system time against 0.7.
//
// So a table the run creates in append mode is filled without it: the hashes it holds
// are kept in memory, by their first 4 bytes (hashKey), each with the fid of its row; a
// feature whose key is there is checked against that row (its whole hash, its feature
// id, its run), which is what the index lookup of ON CONFLICT would have found.
// FinishFeatureTable then builds the index in one sorted pass, as it builds the R-tree. A
// table that still lacks its index (a run that stopped before the end) gets it from the
// next EnsureFeatureTable, before anything writes to it again; the rows are unique already.

// maxDeferred is how many hashes a table's deferred index holds in memory (16 MiB of
// fids and 24 MiB of boxes for 1,500,000, outside the Go heap: fidTable, fidBoxes) before
// the index is built and kept by SQLite from then on: memory stays bounded however large
// the harvest. Store.maxDeferred holds it, which tests lower.
const maxDeferred = 1_500_000

// hashIndex stands for the unique index of a table being filled for the first time. Its
// lookups and additions are made by the holder of the writer; a rollback may undo them
// after the writer is released, hence mu.
type hashIndex struct {
	mu   sync.Mutex
	fids fidTable           // the first 4 bytes of a stored payload hash: the fid of its row
	more map[[32]byte]int64 // stored hashes whose first 4 bytes another stored hash has
	// boxes are the R-tree boxes of the rows inserted, kept outside the Go heap
	// (fidBoxes), so that FinishFeatureTable packs the tree without reading every
	// row back (3 µs per feature); lost (and the rows read) if ever they may not be
	// the boxes of the table's rows (see undo).
	boxes fidBoxes
	lost  bool
	// queries are the statements the table's units prepared for it (deferredSQL), which
	// nothing runs once the index exists: dropDeferred closes them.
	queries []string
}

// prepared records the statements the table's units prepare for it (deferredSQL).
func (x *hashIndex) prepared(queries []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.queries == nil {
		x.queries = queries
	}
}

// hashKey is what a deferred index keys a payload hash on: its first 4 bytes.
func hashKey(hash []byte) uint32 { return binary.LittleEndian.Uint32(hash) }

// find returns the fid of the row that may hold hash: the one whose hash has its first 8
// bytes, unless hash is one of the rare others (more). The caller compares the row's hash.
func (x *hashIndex) find(hash []byte) (int64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.more) > 0 {
		if fid, ok := x.more[[32]byte(hash)]; ok {
			return fid, true
		}
	}
	return x.fids.get(hashKey(hash))
}

// add records that row fid holds hash; clash says another stored hash has its first 4 bytes.
func (x *hashIndex) add(hash []byte, fid int64, clash bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if clash {
		if x.more == nil {
			x.more = map[[32]byte]int64{}
		}
		x.more[[32]byte(hash)] = fid
		return nil
	}
	return x.fids.put(hashKey(hash), fid)
}

// free gives the memory of the index back: the index is built, or the store closed.
func (x *hashIndex) free() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.fids.free()
	x.more = nil
	x.boxes.free()
}

// box adds the R-tree leaf of row fid, of geometry blob geom (nil for none).
func (x *hashIndex) box(fid int64, geom []byte) error {
	if geom == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lost {
		return nil
	}
	env, empty, err := blobEnvelope(geom)
	switch {
	case err != nil:
		x.lost = true // a blob without its envelope: the rows will be read
	case !empty:
		return x.boxes.set(fid, env)
	}
	return nil
}

// undo forgets the rows of a unit that rolled back: added, in the order add saw them,
// and the boxes it gathered, back to marks. Boxes are appended by the holder of the
// writer only, so while the unit still holds it (held) the ones after its marks are its
// own; after, another unit's may follow, and a table's boxes are lost (its rows will
// be read back for the R-tree).
func undo(added []added, marks []boxMark, held bool) {
	for i := len(added) - 1; i >= 0; i-- {
		a := added[i]
		a.x.mu.Lock()
		if a.clash {
			delete(a.x.more, [32]byte(a.hash))
		} else {
			a.x.fids.del(hashKey(a.hash))
		}
		a.x.mu.Unlock()
	}
	for _, m := range marks {
		m.x.mu.Lock()
		if held && !m.x.lost {
			m.x.boxes.boxes = m.x.boxes.boxes[:m.n]
			m.x.boxes.ext, m.x.boxes.ok = m.ext, m.ok
		} else {
			m.x.lost = true
		}
		m.x.mu.Unlock()
	}
}

// boxMark is where a table's boxes stood when a unit first added to them.
type boxMark struct {
	x   *hashIndex
	n   int
	ext orb.Bound
	ok  bool
}

// mark is where x's boxes stand.
func (x *hashIndex) mark() boxMark {
	x.mu.Lock()
	defer x.mu.Unlock()
	return boxMark{x: x, n: len(x.boxes.boxes), ext: x.boxes.ext, ok: x.boxes.ok}
}

func (x *hashIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.fids.len() + len(x.more)
}

// added is a hash a unit's transaction added to a hashIndex, undone if it rolls back.
type added struct {
	x     *hashIndex
	hash  []byte
	clash bool
}

// deferIndex starts holding table name's payload-hash index in memory.
func (s *Store) deferIndex(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deferred == nil {
		s.deferred = map[string]*hashIndex{}
	}
	if old := s.deferred[name]; old != nil {
		old.free()
	}
	s.deferred[name] = &hashIndex{}
}

// deferredIndex is table name's index while it is held in memory, else nil.
func (s *Store) deferredIndex(name string) *hashIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deferred[name]
}

// hashIndexName is the name of table name's unique payload-hash index.
func hashIndexName(name string) string { return name + "_gf_payload_hash_key" }

// hashIndexSQL creates table name's unique payload-hash index.
func hashIndexSQL(name string) string {
	return fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (gf_payload_hash)", quote(hashIndexName(name)), quote(name))
}

// buildHashIndex builds table name's unique payload-hash index if it is held in memory,
// and stops holding it once the index is committed. It returns the R-tree leaves of the
// table's rows, when the index held every row's (the caller frees them), else nil.
func (s *Store) buildHashIndex(ctx context.Context, name string) (*offHeapLeaves, error) {
	x := s.deferredIndex(name)
	if x == nil {
		return nil, nil
	}
	var rows int
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, hashIndexSQL(name)); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, quote(name))).Scan(&rows)
	})
	if err != nil {
		return nil, translate(fmt.Sprintf("indexing the payload hashes of %s", name), err)
	}
	x.mu.Lock()
	var boxes fidBoxes
	whole := !x.lost && rows == x.fids.len()+len(x.more) // no row came another way
	if whole {
		boxes, x.boxes = x.boxes, fidBoxes{}
	}
	x.mu.Unlock()
	s.dropDeferred(name) // the fids' memory goes before the leaves' comes
	if !whole {
		return nil, nil
	}
	defer boxes.free()
	return boxes.leaves()
}

// dropDeferred stops holding table name's index in memory: it exists in the file.
func (s *Store) dropDeferred(name string) {
	s.mu.Lock()
	x := s.deferred[name]
	delete(s.deferred, name)
	s.mu.Unlock()
	if x != nil {
		x.mu.Lock()
		queries := x.queries
		x.mu.Unlock()
		x.free()
		s.forget(queries)
	}
}

// forget closes the writer's statements of queries that warm prepared. One a unit's
// transaction still uses is closed when that transaction ends (database/sql keeps it
// till then).
func (s *Store) forget(queries []string) {
	s.forgetRaw(queries)
	var sts []*sql.Stmt
	s.mu.Lock()
	for _, q := range queries {
		if st, ok := s.stmts[q]; ok {
			sts = append(sts, st)
			delete(s.stmts, q)
		}
	}
	s.mu.Unlock()
	for _, st := range sts {
		st.Close()
	}
}

// freeDeferred gives back the memory of every deferred index, at Close.
func (s *Store) freeDeferred() {
	s.mu.Lock()
	all := s.deferred
	s.deferred = nil
	s.mu.Unlock()
	for _, x := range all {
		x.free()
	}
}

// storedRow is what a table's row by fid says of a payload hash being inserted again.
type storedRow struct {
	hash []byte
	id   sql.NullString
	ours bool // written by the unit's run
}

// insertDeferred inserts the rows whose payload the table does not hold yet into a table
// whose index x holds (see hashIndex), counting the others skipped, and returns those.
// New rows go in several to a statement (deferredBatch), which the unique index's
// per-row answer ruled out before. A row whose hash the index finds waits (found) until
// the new rows are in, and the rows it was found at are read in one statement: it is a
// row again (tiles that overlap) or, rarely, another hash with its first bytes. Each
// inserted hash is recorded in u.added, for Rollback. q is deferredSQL(name, cols).
func (u *unitTx) insertDeferred(ctx context.Context, tx *sql.Tx, x *hashIndex, name string, cols, q []string, rows []featureRow) (res store.Counts, skipped []skippedRow, err error) {
	b := deferredBatch{u: u, tx: tx, x: x, name: name, cols: cols, q: q}
	var found []foundRow
	for _, row := range rows {
		hash := row[2].([]byte)
		if b.holds(hash) { // the same payload twice in the unit, most likely
			if err := b.flush(ctx, &res); err != nil {
				return res, skipped, err
			}
		}
		if fid, ok := x.find(hash); ok {
			found = append(found, foundRow{row: row, fid: fid})
			continue
		}
		if err := b.add(ctx, row, &res); err != nil {
			return res, skipped, err
		}
	}
	if err := b.flush(ctx, &res); err != nil {
		return res, skipped, err
	}
	stored, err := b.lookup(ctx, found)
	if err != nil {
		return res, skipped, err
	}
	for _, f := range found {
		hash := f.row[2].([]byte)
		st, ok := stored[f.fid]
		if fid, _ := x.find(hash); fid != f.fid || !ok {
			// A row this loop inserted holds hash now (a clash found twice), or the row
			// is not where the index said: read it alone, as the index says now.
			if st, err = b.lookupOne(ctx, fid); err != nil {
				return res, skipped, err
			}
		}
		if bytes.Equal(st.hash, hash) {
			res.Skipped++
			skipped = append(skipped, skippedRow{row: f.row, stored: st.id, ours: st.ours})
			continue
		}
		// Another stored hash has this one's first 4 bytes: a row of its own.
		if err := b.insert(ctx, []featureRow{f.row}, true, &res); err != nil {
			return res, skipped, err
		}
	}
	return res, skipped, nil
}

// foundRow is a row whose payload hash the index found at row fid.
type foundRow struct {
	row featureRow
	fid int64
}

// lookup reads the stored rows of found, by fid, in one statement.
func (b *deferredBatch) lookup(ctx context.Context, found []foundRow) (map[int64]storedRow, error) {
	if len(found) == 0 {
		return nil, nil
	}
	fids := []byte{'['}
	for i, f := range found {
		if i > 0 {
			fids = append(fids, ',')
		}
		fids = strconv.AppendInt(fids, f.fid, 10)
	}
	fids = append(fids, ']')
	st, err := b.u.s.stmt(ctx, b.tx, b.q[2])
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, b.u.ref.RunID, string(fids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stored := make(map[int64]storedRow, len(found))
	for rows.Next() {
		var fid int64
		var r storedRow
		if err := rows.Scan(&fid, &r.hash, &r.id, &r.ours); err != nil {
			return nil, err
		}
		stored[fid] = r
	}
	return stored, rows.Err()
}

// lookupOne reads the stored row fid.
func (b *deferredBatch) lookupOne(ctx context.Context, fid int64) (storedRow, error) {
	var r storedRow
	st, err := b.u.s.stmt(ctx, b.tx, b.q[1])
	if err == nil {
		err = st.QueryRowContext(ctx, b.u.ref.RunID, fid).Scan(&r.hash, &r.id, &r.ours)
	}
	return r, err
}

// deferredBatch gathers new rows for a table whose index is deferred and inserts them
// rowsPerInsert to a statement.
type deferredBatch struct {
	u    *unitTx
	tx   *sql.Tx
	x    *hashIndex
	name string
	cols []string
	q    []string // deferredSQL: a full batch's insert, the lookups, then smaller inserts
	rows []featureRow
	args []driver.NamedValue
}

// rowsPerInsert is how many rows one deferred insert statement holds, for cols columns:
// up to 64, and at most 1024 parameters (SQLite allows 32766).
func rowsPerInsert(cols int) int { return max(1, min(64, 1024/cols)) }

// holds tells whether a row whose payload hash has the first 4 bytes of hash waits in
// the batch: it must be stored, and in the index, before hash is looked up.
func (b *deferredBatch) holds(hash []byte) bool {
	p := hashKey(hash)
	for _, r := range b.rows {
		if hashKey(r[2].([]byte)) == p {
			return true
		}
	}
	return false
}

func (b *deferredBatch) add(ctx context.Context, row featureRow, res *store.Counts) error {
	b.rows = append(b.rows, row)
	if len(b.rows) < rowsPerInsert(len(b.cols)) {
		return nil
	}
	return b.flush(ctx, res)
}

func (b *deferredBatch) flush(ctx context.Context, res *store.Counts) error {
	if len(b.rows) == 0 {
		return nil
	}
	// A short batch (a unit's last rows) goes in chunks of a power of two rows, whose
	// statements are prepared once, rather than in one statement SQLite would parse for
	// this unit alone: 1,000 rows a unit left 40 to parse each time, 0.3 us a feature.
	rows := b.rows
	b.rows = b.rows[:0]
	for len(rows) > 0 {
		n := 1 << (bits.Len(uint(len(rows))) - 1)
		if len(rows) == rowsPerInsert(len(b.cols)) {
			n = len(rows)
		}
		if err := b.insert(ctx, rows[:n], false, res); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// insert inserts rows in one statement and records their hashes in the index with the
// fids SQLite gave them: one past the table's largest, in order (the writer is held,
// and AUTOINCREMENT gives each row one more than any the table had).
func (b *deferredBatch) insert(ctx context.Context, rows []featureRow, clash bool, res *store.Counts) error {
	args, err := insertArgs(b.args[:0], rows, len(b.cols))
	if err != nil {
		return err
	}
	b.args = args
	r, err := b.u.s.rawExec(ctx, b.u.conn, b.insertSQL(len(rows)), args)
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	last, err := r.LastInsertId()
	if err != nil {
		return err
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("inserted %d of %d rows", n, len(rows))
	}
	if !slices.ContainsFunc(b.u.marks, func(m boxMark) bool { return m.x == b.x }) {
		b.u.marks = append(b.u.marks, b.x.mark())
	}
	for i, row := range rows {
		hash := row[2].([]byte)
		fid := last - n + 1 + int64(i)
		if err := b.x.add(hash, fid, clash); err != nil {
			return err
		}
		geom, _ := row[0].([]byte)
		if err := b.x.box(fid, geom); err != nil {
			return err
		}
		b.u.added = append(b.u.added, added{x: b.x, hash: hash, clash: clash})
	}
	res.Inserted += n
	return nil
}

// insertArgs appends the parameters of insertRowsSQL for rows, of ncols columns each: the
// shared ones of the first row, then each row's own. Rows of two runs or fetch times
// cannot share an insert.
func insertArgs(args []driver.NamedValue, rows []featureRow, ncols int) ([]driver.NamedValue, error) {
	shared := rows[0][sharedLo:sharedHi]
	args, err := appendNamed(args, shared...)
	for _, r := range rows {
		if err != nil {
			return args, err
		}
		if r[sharedLo] != shared[0] || r[sharedLo+1] != shared[1] {
			return args, fmt.Errorf("rows of two runs or fetches in one insert: %v %v and %v %v", shared[0], shared[1], r[sharedLo], r[sharedLo+1])
		}
		if args, err = appendNamed(args, r[:sharedLo]...); err == nil {
			args, err = appendNamed(args, r[sharedHi:ncols]...)
		}
	}
	return args, err
}

// sharedLo and sharedHi bound the columns of writeFeatures's cols whose value is one for
// all of a unit's rows: the run and the fetch time. A deferred insert binds them once
// (?1, ?2) rather than once a row: two parameters fewer a row for database/sql to check
// and the driver to bind, one of them text it copies.
const sharedLo, sharedHi = 3, 5

// insertRowsSQL inserts n rows into table name's columns cols: the shared ones (?1, ?2,
// first, so that the other parameters are numbered after them) and then each row's own.
func insertRowsSQL(name string, cols []string, n int) string {
	own := slices.Concat(cols[:sharedLo], cols[sharedHi:])
	row := "(?1, ?2, " + placeholders(len(own)) + ")"
	return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES %s", quote(name), strings.Join(cols[sharedLo:sharedHi], ", "),
		strings.Join(own, ", "), strings.TrimSuffix(strings.Repeat(row+", ", n), ", "))
}

// indexedSQL tells whether table name has its unique payload-hash index already: another
// process made it (EnsureFeatureTable) while this one filled the table.
const indexedSQL = `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`

// deferredSQL is the statements insertDeferred runs on table name with columns cols: the
// insert of a full batch, the lookup of a row by fid and of rows by a JSON array of fids,
// then the inserts of 1, 2, 4 ... rows, fewer than a full batch (deferredBatch.flush).
func deferredSQL(name string, cols []string) []string {
	full := rowsPerInsert(len(cols))
	q := []string{
		insertRowsSQL(name, cols, full),
		fmt.Sprintf(`SELECT gf_payload_hash, gf_feature_id, gf_run_id IS ? FROM %s WHERE fid = ?`, quote(name)),
		fmt.Sprintf(`SELECT fid, gf_payload_hash, gf_feature_id, gf_run_id IS ? FROM %s WHERE fid IN (SELECT value FROM json_each(?))`, quote(name)),
	}
	for n := 1; n < full; n *= 2 {
		q = append(q, insertRowsSQL(name, cols, n))
	}
	return slices.Clip(q)
}

// insertSQL is the statement of deferredSQL that inserts n rows: a full batch, or a
// power of two below it.
func (b *deferredBatch) insertSQL(n int) string {
	if n == rowsPerInsert(len(b.cols)) {
		return b.q[0]
	}
	if k := bits.Len(uint(n)) - 1; n == 1<<k && 3+k < len(b.q) {
		return b.q[3+k]
	}
	return insertRowsSQL(b.name, b.cols, n) // not one of them: prepared for this unit
}
