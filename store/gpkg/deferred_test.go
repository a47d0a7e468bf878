package gpkg

import (
	"crypto/sha256"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// features are a unit's features, written through exportSlice.
type features []*spatial.Feature

func pts(ids ...int) features {
	var fs features
	for _, i := range ids {
		fs = append(fs, &spatial.Feature{ID: fmt.Sprintf("p.%d", i), Geometry: orb.Point{float64(i), 1},
			Properties: map[string]any{"n": float64(i)}})
	}
	return fs
}

// deferredFixture is a store with a new table (its index deferred) and a run.
type deferredFixture struct {
	t     *testing.T
	s     *Store
	table store.FeatureTable
	run   int64
	units int
}

func newDeferred(t *testing.T, path string) *deferredFixture {
	t.Helper()
	ctx := t.Context()
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f := &deferredFixture{t: t, s: s, table: store.FeatureTable{Name: "pts", SRID: 4326,
		Columns: []store.Column{{Name: "n", Property: "n", Type: store.TypeBigint}}}}
	if err := s.EnsureFeatureTable(ctx, &f.table); err != nil {
		t.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "deferred"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	f.run = run.ID
	return f
}

// write writes fs as one unit, committed unless rollback, and returns its counts.
func (f *deferredFixture) write(fs features, rollback bool) store.Counts {
	f.t.Helper()
	ctx := f.t.Context()
	f.units++
	key := fmt.Sprint(f.units)
	if err := f.s.AddUnits(ctx, f.run, "a", []store.Unit{{Key: key}}); err != nil {
		f.t.Fatal(err)
	}
	tx, err := f.s.BeginUnit(ctx, store.UnitRef{RunID: f.run, TaskID: "a", Key: key})
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := tx.WriteFeatures(ctx, &f.table, exportSlice(fs))
	if err != nil {
		f.t.Fatal(err)
	}
	if rollback {
		tx.Rollback(ctx)
		return c
	}
	if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
		f.t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *deferredFixture) rows() int {
	f.t.Helper()
	var n int
	if err := f.s.r.QueryRow(`SELECT count(*) FROM pts`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *deferredFixture) indexed() bool {
	f.t.Helper()
	var n int
	if err := f.s.r.QueryRow(indexedSQL, hashIndexName("pts")).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n > 0
}

// prepared tells whether the writer holds every one of queries prepared (Store.warm).
func (f *deferredFixture) prepared(queries ...string) bool {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	for _, q := range queries {
		if _, ok := f.s.stmts[q]; !ok {
			return false
		}
	}
	return true
}

func counts(ins, skip, overlap int64) store.Counts {
	return store.Counts{Inserted: ins, Skipped: skip, Overlap: overlap}
}

func written(c store.Counts) store.Counts { return counts(c.Inserted, c.Skipped, c.Overlap) }

// TestDeferredIndex: a new table is filled without its payload-hash index, with the counts
// the index gives; the index is built at FinishFeatureTable.
func TestDeferredIndex(t *testing.T) {
	f := newDeferred(t, filepath.Join(t.TempDir(), "d.gpkg"))
	if f.indexed() || f.s.deferredIndex("pts") == nil {
		t.Fatal("a new table has its payload-hash index from the start")
	}
	// 200 rows fill more than one statement; 3 is in the unit twice.
	if c := written(f.write(append(pts(seq(1, 200)...), pts(3)...), false)); c != counts(200, 1, 1) {
		t.Errorf("first unit: %+v", c)
	}
	if c := written(f.write(pts(199, 200, 201), false)); c != counts(1, 2, 2) {
		t.Errorf("overlapping unit: %+v", c)
	}
	if c := written(f.write(pts(300, 301), true)); c != counts(2, 0, 0) {
		t.Errorf("rolled back unit: %+v", c)
	}
	if c := written(f.write(pts(300, 301), false)); c != counts(2, 0, 0) {
		t.Errorf("a rolled back unit's features, again: %+v (the rollback must forget them)", c)
	}
	if n := f.rows(); n != 203 {
		t.Errorf("%d rows, want 203", n)
	}
	queries := f.s.deferredIndex("pts").queries
	if len(queries) < 3 || !f.prepared(queries[1:3]...) || f.prepared(queries[0]) {
		t.Fatalf("the units' lookups are not prepared through database/sql, or its inserts are: %d statements", len(queries))
	}
	if err := f.s.FinishFeatureTable(t.Context(), &f.table); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if f.prepared(q) {
			t.Errorf("still prepared once the index exists: %.60s", q)
		}
	}
	if !f.indexed() || f.s.deferredIndex("pts") != nil {
		t.Fatal("FinishFeatureTable built no payload-hash index")
	}
	if c := written(f.write(pts(1, 2, 500), false)); c != counts(1, 2, 2) {
		t.Errorf("after the index is built: %+v", c)
	}
	for _, tc := range []struct {
		name string
		b    orb.Bound
		want int64
	}{
		{"an area around all (the R-tree's rowid table)", orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{600, 2}}, 204},
		{"an area around some (the R-tree)", orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{100.5, 2}}, 100},
		{"an area just short of the last", orb.Bound{Min: orb.Point{1, 1}, Max: orb.Point{499, 1}}, 203},
	} {
		if n, err := f.s.CountFeatures(t.Context(), &f.table, tc.b); err != nil || n != tc.want {
			t.Errorf("CountFeatures, %s: %d (%v), want %d", tc.name, n, err, tc.want)
		}
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

// TestDeferredIndexAfterAStop: a run that stops before FinishFeatureTable leaves the
// table without its index; the next EnsureFeatureTable builds it over the rows.
func TestDeferredIndexAfterAStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.gpkg")
	f := newDeferred(t, path)
	f.write(pts(1, 2, 3), false)
	f.s.Close()
	g := newDeferred(t, path)
	if !g.indexed() || g.s.deferredIndex("pts") != nil {
		t.Fatal("EnsureFeatureTable left an existing table without its payload-hash index")
	}
	if c := written(g.write(pts(2, 3, 4), false)); c != counts(1, 2, 0) {
		t.Errorf("after the stop: %+v", c)
	}
}

// TestDeferredIndexMadeElsewhere: another process's EnsureFeatureTable indexes the table
// while this one fills it; this one's next unit sees the index and uses it.
func TestDeferredIndexMadeElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.gpkg")
	f := newDeferred(t, path)
	f.write(pts(1, 2), false)
	other, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.EnsureFeatureTable(t.Context(), &f.table); err != nil {
		t.Fatal(err)
	}
	if f.s.deferredIndex("pts") == nil {
		t.Fatal("test set-up: this store stopped deferring before its next unit")
	}
	if c := written(f.write(pts(2, 3), false)); c != counts(1, 1, 1) {
		t.Errorf("after the other process indexed the table: %+v", c)
	}
	if f.s.deferredIndex("pts") != nil {
		t.Error("the store still defers an index that exists")
	}
}

// TestDeferredIndexClash: two payload hashes with the same first 8 bytes are two rows,
// and each is found again, in the unit that inserts them and in the next one.
func TestDeferredIndexClash(t *testing.T) {
	f := newDeferred(t, filepath.Join(t.TempDir(), "d.gpkg"))
	ctx := t.Context()
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	copy(b[:8], a[:8])
	row := func(id string, h [32]byte) featureRow {
		return featureRow{nil, id, h[:], f.run, ts(time.Now()), int64(1)}
	}
	cols := []string{`"geom"`, `"gf_feature_id"`, `"gf_payload_hash"`, `"gf_run_id"`, `"gf_fetched_at"`, `"n"`}
	if err := f.s.AddUnits(ctx, f.run, "a", []store.Unit{{Key: "c"}}); err != nil {
		t.Fatal(err)
	}
	u := &unitTx{s: f.s, ref: store.UnitRef{RunID: f.run, TaskID: "a", Key: "c"}}
	c, err := u.insertNew(ctx, "pts", cols, []featureRow{row("a", a), row("b", b), row("a", a), row("b", b)})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := written(c); got != counts(2, 2, 2) {
		t.Errorf("two hashes of one prefix, twice each: %+v", got)
	}
	if n := f.rows(); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
	// A second unit: both found again (b by the index's other hashes) and read in one
	// statement, with a new hash twice around them.
	c3 := sha256.Sum256([]byte("c"))
	u = &unitTx{s: f.s, ref: store.UnitRef{RunID: f.run, TaskID: "a", Key: "c"}}
	c, err = u.insertNew(ctx, "pts", cols, []featureRow{row("b", b), row("c", c3), row("a", a), row("c", c3), row("b", b)})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := written(c); got != counts(1, 4, 4) {
		t.Errorf("the two again, and a new one twice: %+v", got)
	}
	if n := f.rows(); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
	if err := f.s.FinishFeatureTable(ctx, &f.table); err != nil {
		t.Fatalf("building the index over them: %v", err)
	}
}

// TestDeferredSharedValues: rows of two runs or fetch times cannot share an insert, which
// binds the run and the fetch time once; the unit stores none of them.
func TestDeferredSharedValues(t *testing.T) {
	f := newDeferred(t, filepath.Join(t.TempDir(), "d.gpkg"))
	ctx := t.Context()
	row := func(id string, run int64, at string) featureRow {
		h := sha256.Sum256([]byte(id))
		return featureRow{nil, id, h[:], run, at, int64(1)}
	}
	cols := []string{`"geom"`, `"gf_feature_id"`, `"gf_payload_hash"`, `"gf_run_id"`, `"gf_fetched_at"`, `"n"`}
	if err := f.s.AddUnits(ctx, f.run, "a", []store.Unit{{Key: "c"}}); err != nil {
		t.Fatal(err)
	}
	for _, rows := range [][]featureRow{
		{row("a", f.run, "2026-01-01T00:00:00Z"), row("b", f.run+1, "2026-01-01T00:00:00Z")},
		{row("a", f.run, "2026-01-01T00:00:00Z"), row("b", f.run, "2026-01-01T00:00:01Z")},
	} {
		u := &unitTx{s: f.s, ref: store.UnitRef{RunID: f.run, TaskID: "a", Key: "c"}}
		_, err := u.insertNew(ctx, "pts", cols, rows)
		u.Rollback(ctx)
		if err == nil || !strings.Contains(err.Error(), "two runs or fetches") {
			t.Errorf("rows %v and %v in one insert: %v", rows[0][3:5], rows[1][3:5], err)
		}
	}
	if n := f.rows(); n != 0 {
		t.Errorf("%d rows stored, want none", n)
	}
}

// TestDeferredRawStatements: the deferred inserts run on the writer's driver connection
// (rawExec); once the table's index exists their statements are stale, and every one is
// finalized by Close: SQLite removes the WAL only when the writer's last statement is
// gone. A value that is not a driver.Value goes in as database/sql would convert it.
func TestDeferredRawStatements(t *testing.T) {
	for _, finish := range []bool{false, true} {
		t.Run(fmt.Sprint("finished=", finish), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.gpkg")
			f := newDeferred(t, path)
			if c := written(f.write(pts(seq(1, 101)...), false)); c != counts(101, 0, 0) {
				t.Fatalf("counts %+v", c)
			}
			queries := f.s.deferredIndex("pts").queries
			f.s.mu.Lock()
			n := len(f.s.raw.stmts)
			f.s.mu.Unlock()
			if n != 4 { // 64 + 32 + 4 + 1 rows
				t.Errorf("%d raw statements, want the 4 inserts", n)
			}
			if finish {
				if err := f.s.FinishFeatureTable(t.Context(), &f.table); err != nil {
					t.Fatal(err)
				}
				f.s.mu.Lock()
				for _, q := range queries {
					if _, ok := f.s.raw.stmts[q]; ok {
						t.Errorf("still a live raw statement once the index exists: %.60s", q)
					}
				}
				stale := len(f.s.raw.stale)
				f.s.mu.Unlock()
				if stale != 4 {
					t.Errorf("%d stale raw statements, want 4", stale)
				}
			}
			f.s.Close()
			if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
				t.Errorf("the WAL is still there after Close (%v): a statement of the writer was not finalized", err)
			}
		})
	}
	args, err := appendNamed(nil, 1, int32(2), float32(0.5), "s", nil, []byte{1})
	want := []driver.NamedValue{{Ordinal: 1, Value: int64(1)}, {Ordinal: 2, Value: int64(2)}, {Ordinal: 3, Value: float64(0.5)},
		{Ordinal: 4, Value: "s"}, {Ordinal: 5, Value: nil}, {Ordinal: 6, Value: []byte{1}}}
	if err != nil || !reflect.DeepEqual(args, want) {
		t.Errorf("appendNamed = %v, %v; want %v", args, err, want)
	}
	if _, err := appendNamed(nil, struct{}{}); err == nil || !strings.Contains(err.Error(), "parameter 1") {
		t.Errorf("a struct: %v, want an error naming parameter 1", err)
	}
}

// TestDeferredIndexBound: past maxDeferred hashes the index is built, and SQLite keeps
// it from the next unit on.
func TestDeferredIndexBound(t *testing.T) {
	f := newDeferred(t, filepath.Join(t.TempDir(), "d.gpkg"))
	f.s.maxDeferred = 5
	f.write(pts(seq(1, 6)...), false)
	if f.indexed() {
		t.Fatal("the index was built within a unit")
	}
	if c := written(f.write(pts(6, 7), false)); c != counts(1, 1, 1) {
		t.Errorf("the unit after the bound: %+v", c)
	}
	if !f.indexed() || f.s.deferredIndex("pts") != nil {
		t.Error("past its bound the index is still held in memory")
	}
}

func TestRTreeNodeBound(t *testing.T) {
	n := &rnode{depth: 1, cells: []rtreeEntry{{id: 2, minx: 1, maxx: 2, miny: -3, maxy: 4}, {id: 3, minx: -1, maxx: 0.5, miny: 5, maxy: 6}}}
	b, ok := rtreeNodeBound(nodeBlob(n, 4+rtreeMaxCells*rtreeCell))
	if want := (orb.Bound{Min: orb.Point{-1, -3}, Max: orb.Point{2, 6}}); !ok || b != want {
		t.Errorf("rtreeNodeBound = %v %v, want %v", b, ok, want)
	}
	if _, ok := rtreeNodeBound(nodeBlob(&rnode{}, 4+rtreeMaxCells*rtreeCell)); ok {
		t.Error("a node without cells has a box")
	}
	if _, ok := rtreeNodeBound([]byte{0, 0, 0, 9}); ok {
		t.Error("a blob shorter than its cells has a box")
	}
}

// TestDeferredRTree: the boxes gathered while the index was deferred build the R-tree,
// which SQLite's rtreecheck accepts, with every row's box and none of a unit that rolled
// back, and the table's extent; undone once the writer is released, they are given up.
func TestDeferredRTree(t *testing.T) {
	for _, tc := range []struct {
		name           string
		rollback, lost bool
	}{{"committed", false, false}, {"a unit rolled back", true, false}, {"a unit undone after the writer", false, true}} {
		rollback := tc.rollback
		t.Run(tc.name, func(t *testing.T) {
			f := newDeferred(t, filepath.Join(t.TempDir(), "d.gpkg"))
			ctx := t.Context()
			f.write(pts(seq(1, 150)...), false)
			none := &spatial.Feature{ID: "none", Properties: map[string]any{"n": float64(0)}}
			f.write(append(pts(seq(151, 300)...), none), false)
			if rollback {
				f.write(pts(400), true)
			}
			if tc.lost {
				x := f.s.deferredIndex("pts")
				undo(nil, []boxMark{x.mark()}, false)
			}
			leaves, err := f.s.buildHashIndex(ctx, "pts")
			if err != nil {
				t.Fatal(err)
			}
			if got := leaves != nil; got == tc.lost {
				t.Fatalf("leaves given: %v", got)
			}
			if leaves != nil && len(leaves.entries) != 300 {
				t.Errorf("%d leaves, want 300", len(leaves.entries))
			}
			if err := f.s.finishSpatial(ctx, "pts", "geom", leaves); err != nil {
				t.Fatal(err)
			}
			leaves.free()
			var check string
			var n, lo, hi int64
			var minx, maxx float64
			if err := f.s.r.QueryRow(`SELECT rtreecheck('rtree_pts_geom'), count(*), min(id), max(id), min(minx), max(maxx) FROM rtree_pts_geom`).
				Scan(&check, &n, &lo, &hi, &minx, &maxx); err != nil {
				t.Fatal(err)
			}
			if check != "ok" || n != 300 || lo != 1 || hi != 300 || minx != 1 || maxx != 300 {
				t.Errorf("R-tree: %s, %d boxes, ids %d-%d, x %v-%v; want ok, 300, 1-300, 1-300", check, n, lo, hi, minx, maxx)
			}
			if err := f.s.r.QueryRow(`SELECT min_x, max_x FROM gpkg_contents WHERE table_name = 'pts'`).Scan(&minx, &maxx); err != nil || minx != 1 || maxx != 300 {
				t.Errorf("extent: x %v-%v (%v), want 1-300", minx, maxx, err)
			}
		})
	}
}

// TestDeferredBatchSizes: a unit whose rows are not a whole number of full batches ends
// in smaller inserts (64 + 32 + 4 + 1 for 101 rows). Every row must still be found by its
// hash at the fid SQLite gave it, with its own box, the unit's run and one fetch time.
func TestDeferredBatchSizes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 63, 64, 65, 101, 135} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := newDeferred(t, filepath.Join(t.TempDir(), "d.gpkg"))
			if c := written(f.write(pts(seq(1, n)...), false)); c != counts(int64(n), 0, 0) {
				t.Fatalf("counts %+v, want %d inserted", c, n)
			}
			x := f.s.deferredIndex("pts")
			rows, err := f.s.r.Query(`SELECT fid, gf_payload_hash, n, gf_run_id, gf_fetched_at FROM pts ORDER BY fid`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			seen, fetched := 0, ""
			for rows.Next() {
				var fid, v, run int64
				var hash []byte
				var at string
				if err := rows.Scan(&fid, &hash, &v, &run, &at); err != nil {
					t.Fatal(err)
				}
				seen++
				if fetched == "" {
					fetched = at
				}
				if run != f.run || at != fetched || len(at) < 20 {
					t.Errorf("row %d: run %d, fetched at %q; want run %d and the first row's %q", fid, run, at, f.run, fetched)
				}
				if got, ok := x.find(hash); !ok || got != fid {
					t.Errorf("row %d (n=%d): its hash finds fid %d (%v)", fid, v, got, ok)
				}
				if fid != v {
					t.Errorf("row %d holds n=%d: rows went in out of order", fid, v)
				}
			}
			if err := rows.Err(); err != nil || seen != n {
				t.Fatalf("%d rows (%v), want %d", seen, err, n)
			}
			if again := written(f.write(pts(seq(1, n)...), false)); again != counts(0, int64(n), int64(n)) {
				t.Errorf("the same unit again: %+v, want all %d skipped", again, n)
			}
			leaves, err := f.s.buildHashIndex(t.Context(), "pts")
			if err != nil || leaves == nil || len(leaves.entries) != n {
				t.Fatalf("leaves: %v, %v; want %d", leaves, err, n)
			}
			defer leaves.free()
			for _, e := range leaves.entries {
				if e.minx != float32(e.id) || e.maxx != float32(e.id) {
					t.Errorf("fid %d has the box x %v-%v, want %d", e.id, e.minx, e.maxx, e.id)
				}
			}
		})
	}
}
