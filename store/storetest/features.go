package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// world is every lon/lat.
var world = orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}

// typedTable is a feature table with a column of every type, named otherwise than the
// properties they hold.
func typedTable(name string, mode store.Mode) *store.FeatureTable {
	return &store.FeatureTable{Name: name, SRID: 4326, Mode: mode, Columns: []store.Column{
		{Name: "name", Property: "Name", Type: store.TypeText},
		{Name: "n", Property: "N", Type: store.TypeBigint},
		{Name: "area", Property: "Area", Type: store.TypeDouble},
		{Name: "ok", Property: "OK", Type: store.TypeBoolean},
		{Name: "day", Property: "Day", Type: store.TypeDate},
		{Name: "at", Property: "At", Type: store.TypeTimestamptz},
		{Name: "attrs", Property: "Attrs", Type: store.TypeJSONB},
	}}
}

// typedFeatures are features with values of every type, as servers send them: JSON
// numbers and booleans, and their text forms.
func typedFeatures() []*spatial.Feature {
	return []*spatial.Feature{
		{ID: "p.1", Geometry: orb.Point{1, 1}, Properties: map[string]any{
			"Name": "one", "N": float64(1), "Area": 1.5, "OK": true, "Day": "2024-05-01",
			"At": "2024-05-01T10:00:00Z", "Attrs": map[string]any{"a": 1.0, "b": []any{"x"}}}},
		{ID: "p.2", Geometry: orb.Polygon{{{2, 2}, {2.5, 2}, {2.5, 2.5}, {2, 2}}}, Properties: map[string]any{
			"Name": "two", "N": "2", "Area": "2.25", "OK": "yes", "Day": "2024-05-02",
			"At": "2024-05-02T10:00:00+02:00", "Attrs": map[string]any{}}},
		{ID: "p.3", Geometry: orb.LineString{{50, 50}, {51, 51}}, Properties: map[string]any{
			"Name": "three", "N": int64(-3), "Area": int64(3), "OK": "f", "Extra": "not a column"}},
		{ID: "p.4", Properties: map[string]any{"Name": "no geometry"}},
		{ID: "p.5", Geometry: orb.MultiPoint{{1.5, 1.5}, {60, 60}}, Properties: map[string]any{
			"Name": nil, "N": nil, "Area": nil, "OK": nil, "Day": nil, "At": nil, "Attrs": nil}},
	}
}

// testFeatureTables: EnsureFeatureTable creates a table once and accepts it again as it
// is, refuses one whose columns differ with a *store.IncompatibleTableError, and
// FinishFeatureTable is idempotent.
func testFeatureTables(t *testing.T, s store.Store) {
	ctx := t.Context()
	tables := []*store.FeatureTable{
		typedTable("parcels", store.ModeAppend),
		typedTable("parcels_upsert", ""),
		{Schema: "staging", Name: "roads", SRID: 3857, Mode: store.ModeUpsert, Key: []string{"code", "part"},
			Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeText}, {Name: "part", Property: "part", Type: store.TypeBigint}}},
		{Name: "bare", SRID: 4326},
	}
	tables[1].Mode, tables[1].Key = store.ModeUpsert, []string{"name"}
	for _, tab := range tables {
		t.Run(tab.Schema+"."+tab.Name, func(t *testing.T) {
			for i := range 2 {
				if err := s.EnsureFeatureTable(ctx, tab); err != nil {
					t.Fatalf("EnsureFeatureTable (%d): %v", i+1, err)
				}
			}
			for i := range 2 {
				if err := s.FinishFeatureTable(ctx, tab); err != nil {
					t.Fatalf("FinishFeatureTable (%d): %v", i+1, err)
				}
			}
			// A table already indexed is accepted again as it is.
			if err := s.EnsureFeatureTable(ctx, tab); err != nil {
				t.Fatalf("EnsureFeatureTable after FinishFeatureTable: %v", err)
			}
			if n, err := s.CountFeatures(ctx, tab, world); err != nil || n != 0 {
				t.Errorf("a new table counts %d features (%v), want 0", n, err)
			}
		})
	}

	incompatible := []struct {
		name    string
		table   *store.FeatureTable
		problem string // a column the error must name
	}{
		{name: "a column of another type", problem: `"n"`, table: func() *store.FeatureTable {
			tab := typedTable("parcels", store.ModeAppend)
			tab.Columns[1].Type = store.TypeText
			return tab
		}()},
		{name: "a column missing", problem: `"extra"`, table: func() *store.FeatureTable {
			tab := typedTable("parcels", store.ModeAppend)
			tab.Columns = append(tab.Columns, store.Column{Name: "extra", Property: "Extra", Type: store.TypeText})
			return tab
		}()},
		{name: "a text key as bigint", problem: `"code"`, table: &store.FeatureTable{Schema: "staging", Name: "roads", SRID: 3857,
			Mode: store.ModeUpsert, Key: []string{"code"}, Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeBigint}}}},
	}
	for _, tt := range incompatible {
		t.Run(tt.name, func(t *testing.T) {
			err := s.EnsureFeatureTable(ctx, tt.table)
			var inc *store.IncompatibleTableError
			if !errors.As(err, &inc) {
				t.Fatalf("EnsureFeatureTable: %v, want a *store.IncompatibleTableError", err)
			}
			if inc.Table == "" || !strings.Contains(strings.Join(inc.Problems, "; "), tt.problem) {
				t.Errorf("IncompatibleTableError{Table: %q, Problems: %q}, want the table and column %s named", inc.Table, inc.Problems, tt.problem)
			}
		})
	}
}

// testWriteAppend: in append mode a feature is stored once per payload: the same payload
// again, in a later unit or twice in one page, is skipped.
func testWriteAppend(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 8)
	ref := func(i int) store.UnitRef { return store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)} }
	moved := &spatial.Feature{ID: "p.1", Geometry: orb.Point{1.25, 1.25}, Properties: map[string]any{"Name": "one, moved"}}
	dup := &spatial.Feature{ID: "p.6", Geometry: orb.Point{2.75, 2.75}, Properties: map[string]any{"Name": "twice"}}
	// Distinct features (ids) with one payload: append mode stores the payload once, and
	// says how many it merged so that completeness checks count them.
	twin := func(id string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: orb.Point{2.5, 2.5}, Properties: map[string]any{"Name": "twins"}}
	}
	dupOther := &spatial.Feature{ID: "p.60", Geometry: orb.Point{2.75, 2.75}, Properties: map[string]any{"Name": "twice"}}
	tests := []struct {
		name string
		fs   []*spatial.Feature
		want store.Counts
	}{
		{name: "new features", fs: typedFeatures(), want: store.Counts{Inserted: 5}},
		{name: "the same payloads again", fs: typedFeatures(), want: store.Counts{Skipped: 5, Overlap: 5}},
		{name: "one feature twice in a page", fs: []*spatial.Feature{dup, dup}, want: store.Counts{Inserted: 1, Skipped: 1, Overlap: 1}},
		{name: "a changed feature is added", fs: []*spatial.Feature{moved, typedFeatures()[1]}, want: store.Counts{Inserted: 1, Skipped: 1, Overlap: 1}},
		{name: "an empty page", fs: nil, want: store.Counts{}},
		{name: "two ids, one payload, in a page", fs: []*spatial.Feature{twin("p.7"), twin("p.8"), twin("p.8")}, want: store.Counts{Inserted: 1, Skipped: 2, Overlap: 2, Merged: 1}},
		{name: "a stored payload under another id", fs: []*spatial.Feature{dupOther, dup}, want: store.Counts{Skipped: 2, Overlap: 2, Merged: 1}},
		{name: "the same again from an overlapping tile: merged once in the run", fs: []*spatial.Feature{dupOther, twin("p.8")}, want: store.Counts{Skipped: 2, Overlap: 2}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeFeatures(t, s, ref(i), table, tt.fs...); got != tt.want {
				t.Errorf("WriteFeatures = %+v, want %+v", got, tt.want)
			}
		})
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	// p.1 twice (moved), p.2, p.3, p.5, p.6 and one of p.7/p.8; p.4 has no geometry.
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 6 {
		t.Errorf("CountFeatures = %d (%v), want 6 distinct features with a geometry", n, err)
	}
	if n, err := s.MergedFeatures(ctx, run.ID, "a"); err != nil || n != 2 {
		t.Errorf("MergedFeatures = %d (%v), want 2 (p.8 and p.60)", n, err)
	}
}

// testWriteUpsert: in upsert mode a feature is keyed on its key columns: a new key is
// inserted, a changed payload updated in place, an unchanged one skipped, and a NULL key
// is one row like any other value. The table is indexed (FinishFeatureTable) after the
// first write, as a first harvest leaves it for the next run, whose updates move
// features: CountFeatures finds them where they moved.
func testWriteUpsert(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := &store.FeatureTable{Name: "roads", SRID: 4326, Mode: store.ModeUpsert, Key: []string{"code"},
		Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeText}, {Name: "n", Property: "n", Type: store.TypeBigint}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "roads"})
	addUnits(t, s, run.ID, "a", 6)
	ref := func(i int) store.UnitRef { return store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)} }
	// The feature with a NULL key has no id either, so CountFeatures counts its rows by
	// payload: two rows would count twice. Both features move with n.
	page := func(n float64) []*spatial.Feature {
		return []*spatial.Feature{
			{ID: "r.a", Geometry: orb.Point{1, n}, Properties: map[string]any{"code": "A", "n": n}},
			{Geometry: orb.Point{2, n}, Properties: map[string]any{"code": nil, "n": n}},
		}
	}
	b := &spatial.Feature{ID: "r.b", Geometry: orb.Point{3, 3}, Properties: map[string]any{"code": "B", "n": 1.0}}
	tests := []struct {
		name string
		fs   []*spatial.Feature
		want store.Counts
	}{
		{name: "new keys, one NULL", fs: page(1), want: store.Counts{Inserted: 2}},
		{name: "unchanged", fs: page(1), want: store.Counts{Skipped: 2, Overlap: 2}},
		{name: "changed, the NULL key too", fs: page(2), want: store.Counts{Updated: 2}},
		{name: "unchanged again", fs: page(2), want: store.Counts{Skipped: 2, Overlap: 2}},
		{name: "one feature twice in a page", fs: []*spatial.Feature{b, b}, want: store.Counts{Inserted: 1, Skipped: 1, Overlap: 1}},
		{name: "changed back and a new key", fs: append(page(5), &spatial.Feature{ID: "r.c", Geometry: orb.Point{4, 4},
			Properties: map[string]any{"code": "C"}}), want: store.Counts{Inserted: 1, Updated: 2}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeFeatures(t, s, ref(i), table, tt.fs...); got != tt.want {
				t.Errorf("WriteFeatures = %+v, want %+v", got, tt.want)
			}
		})
		if i == 0 {
			if err := s.FinishFeatureTable(ctx, table); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 4 {
		t.Errorf("CountFeatures = %d (%v), want 4: A, the NULL key once, B and C", n, err)
	}
	around := func(x, y float64) orb.Bound {
		return orb.Bound{Min: orb.Point{x - 0.1, y - 0.1}, Max: orb.Point{x + 0.1, y + 0.1}}
	}
	for _, c := range []struct {
		name string
		at   orb.Bound
		want int64
	}{
		{"where A and the NULL-key feature were first", orb.Bound{Min: orb.Point{0.9, 0.9}, Max: orb.Point{2.1, 1.1}}, 0},
		{"where they were next", orb.Bound{Min: orb.Point{0.9, 1.9}, Max: orb.Point{2.1, 2.1}}, 0},
		{"where A is now", around(1, 5), 1},
		{"where the NULL-key feature is now", around(2, 5), 1},
	} {
		if n, err := s.CountFeatures(ctx, table, c.at); err != nil || n != c.want {
			t.Errorf("CountFeatures %s = %d (%v), want %d", c.name, n, err, c.want)
		}
	}
}

// testWriteUpsertCompositeKey: a key of several columns, one of them NULL, is one row
// per distinct key, NULL matching NULL.
func testWriteUpsertCompositeKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := &store.FeatureTable{Schema: "staging", Name: "parts", SRID: 4326, Mode: store.ModeUpsert, Key: []string{"code", "part"},
		Columns: []store.Column{{Name: "label", Property: "label", Type: store.TypeText},
			{Name: "code", Property: "code", Type: store.TypeText}, {Name: "part", Property: "part", Type: store.TypeBigint}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "parts"})
	addUnits(t, s, run.ID, "a", 3)
	page := func(label string) []*spatial.Feature {
		return []*spatial.Feature{
			{Geometry: orb.Point{1, 1}, Properties: map[string]any{"label": label, "code": "A", "part": 1.0}},
			{Geometry: orb.Point{2, 2}, Properties: map[string]any{"label": label, "code": "A", "part": 2.0}},
			{Geometry: orb.Point{3, 3}, Properties: map[string]any{"label": label, "code": "A"}},
			{Geometry: orb.Point{4, 4}, Properties: map[string]any{"label": label, "part": 1.0}},
		}
	}
	tests := []struct {
		name string
		fs   []*spatial.Feature
		want store.Counts
	}{
		{name: "new keys", fs: page("x"), want: store.Counts{Inserted: 4}},
		{name: "changed", fs: page("y"), want: store.Counts{Updated: 4}},
		{name: "unchanged", fs: page("y"), want: store.Counts{Skipped: 4, Overlap: 4}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeFeatures(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)}, table, tt.fs...); got != tt.want {
				t.Errorf("WriteFeatures = %+v, want %+v", got, tt.want)
			}
		})
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 4 {
		t.Errorf("CountFeatures = %d (%v), want 4 rows, one per key", n, err)
	}
}

// testWriteBadValue: a value that does not fit its column fails the write with a
// *store.PropertyError naming the feature, property, type and value, and leaves nothing
// written.
func testWriteBadValue(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 1)
	ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}
	tests := []struct {
		name     string
		property string
		value    any
		typ      store.ColumnType
	}{
		{name: "a word in a bigint column", property: "N", value: "many", typ: store.TypeBigint},
		{name: "a fraction in a bigint column", property: "N", value: 1.5, typ: store.TypeBigint},
		{name: "a word in a double column", property: "Area", value: "large", typ: store.TypeDouble},
		{name: "a word in a boolean column", property: "OK", value: "maybe", typ: store.TypeBoolean},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := features{
				{ID: "good", Geometry: orb.Point{1, 1}, Properties: map[string]any{"Name": "fine", "N": 1.0}},
				{ID: "bad", Geometry: orb.Point{2, 2}, Properties: map[string]any{"Name": "broken", tt.property: tt.value}},
				{ID: "after", Geometry: orb.Point{3, 3}, Properties: map[string]any{"Name": "after"}},
			}
			_, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.WriteFeatures(ctx, table, &src)
			})
			var pe *store.PropertyError
			if !errors.As(err, &pe) {
				t.Fatalf("WriteFeatures: %v, want a *store.PropertyError", err)
			}
			want := store.PropertyError{FeatureID: "bad", Property: tt.property, Type: tt.typ, Value: fmt.Sprint(tt.value)}
			if *pe != want {
				t.Errorf("PropertyError = %+v, want %+v", *pe, want)
			}
			if _, ok := store.AsFault(err); ok {
				t.Errorf("bad data came back as a store fault: %v", err)
			}
			if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 0 {
				t.Errorf("%d features stored (%v), want none", n, err)
			}
			if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Pending {
				t.Errorf("the unit is %q (%v), want pending", state, err)
			}
		})
	}
}

// testWriteSourceError: an error from the source (not io.EOF) aborts the write and comes
// back wrapped but unchanged, never as a store fault, and nothing is written.
func testWriteSourceError(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 1)
	ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}
	errTruncated := &sourceError{msg: "response truncated after 2 features"}
	tests := []struct {
		name string
		fs   []*spatial.Feature
	}{
		{name: "at once", fs: nil},
		{name: "after some features", fs: typedFeatures()[:2]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &failingSource{features: features(tt.fs), err: errTruncated}
			_, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.WriteFeatures(ctx, table, src)
			})
			if !errors.Is(err, errTruncated) {
				t.Fatalf("WriteFeatures: %v, want the source's error", err)
			}
			var se *sourceError
			if !errors.As(err, &se) || se != errTruncated {
				t.Errorf("WriteFeatures: %v, want the source's error itself in the chain", err)
			}
			if f, ok := store.AsFault(err); ok {
				t.Errorf("the source's failure came back as a store fault: %+v", f)
			}
			if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 0 {
				t.Errorf("%d features stored (%v), want none", n, err)
			}
			if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Pending {
				t.Errorf("the unit is %q (%v), want pending", state, err)
			}
		})
	}
}

// sourceError is a source's own failure, which the store must hand back as it is.
type sourceError struct{ msg string }

func (e *sourceError) Error() string { return e.msg }

// testCountFeatures: CountFeatures counts distinct features (by id, or by payload for
// features without one) whose geometry's box meets a lon/lat box, in the table's CRS.
func testCountFeatures(t *testing.T, s store.Store) {
	ctx := t.Context()
	lonlat := &store.FeatureTable{Name: "lonlat", SRID: 4326, Columns: []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}}
	merc := &store.FeatureTable{Name: "merc", SRID: 3857, Columns: lonlat.Columns}
	utm := &store.FeatureTable{Name: "utm", SRID: 25832, Columns: lonlat.Columns}
	// FinishFeatureTable builds indexes that make counting fast; counting must not need
	// them.
	unindexed := &store.FeatureTable{Name: "unindexed", SRID: 4326, Columns: lonlat.Columns}
	for _, tab := range []*store.FeatureTable{lonlat, merc, utm, unindexed} {
		if err := s.EnsureFeatureTable(ctx, tab); err != nil {
			t.Fatal(err)
		}
	}
	run := startRun(t, s, store.RunStart{Flow: "count"})
	if n, err := s.CountFeatures(ctx, unindexed, world); err != nil || n != 0 {
		t.Errorf("CountFeatures of a new table = %d (%v), want 0", n, err)
	}
	addUnits(t, s, run.ID, "a", 5)
	ref := func(i int) store.UnitRef { return store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)} }
	f := func(id string, g orb.Geometry, v string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: g, Properties: map[string]any{"v": v}}
	}
	writeFeatures(t, s, ref(0), lonlat,
		f("a", orb.Point{1, 1}, "1"),
		f("a", orb.Point{1.5, 1.5}, "the same feature, another payload"),
		f("b", orb.Polygon{{{2, 2}, {4, 2}, {4, 4}, {2, 2}}}, "reaching out of the box"),
		f("", orb.Point{0.5, 0.5}, "no id"),
		f("", orb.Point{0.6, 0.6}, "no id either"),
		f("far", orb.Point{50, 50}, "outside"),
		f("none", nil, "no geometry"),
	)
	// Finished after a first write and written again: the index follows later writes.
	if err := s.FinishFeatureTable(ctx, lonlat); err != nil {
		t.Fatal(err)
	}
	writeFeatures(t, s, ref(1), lonlat, f("late", orb.Point{2.5, 0.5}, "written after the index"), f("west", orb.Point{-3, 1}, "west"))
	m := func(lon, lat float64) orb.Point { return project.WGS84.ToMercator(orb.Point{lon, lat}) }
	writeFeatures(t, s, ref(2), merc, f("m1", m(10, 10), "in"), f("m2", m(30, 30), "out"))
	if err := s.FinishFeatureTable(ctx, merc); err != nil {
		t.Fatal(err)
	}
	// lon 9, lat 45 is about (500000, 4982950) in UTM zone 32N.
	writeFeatures(t, s, ref(3), utm, f("u1", orb.Point{500000, 4982950}, "in"), f("u2", orb.Point{300000, 4000000}, "out"))
	if err := s.FinishFeatureTable(ctx, utm); err != nil {
		t.Fatal(err)
	}
	writeFeatures(t, s, ref(4), unindexed, f("i1", orb.Point{1, 1}, "in"), f("i2", orb.Point{30, 30}, "out"), f("", orb.Point{1, 1.5}, "in"))

	box := func(x0, y0, x1, y1 float64) orb.Bound {
		return orb.Bound{Min: orb.Point{x0, y0}, Max: orb.Point{x1, y1}}
	}
	tests := []struct {
		name  string
		table *store.FeatureTable
		bbox  orb.Bound
		want  int64
		// noTransform: a store without PROJ may answer store.ErrNoTransform instead.
		noTransform bool
	}{
		{name: "around the first features", table: lonlat, bbox: box(0, 0, 3, 3), want: 5},
		{name: "a polygon reaching in", table: lonlat, bbox: box(3.5, 3.5, 3.6, 3.6), want: 1},
		{name: "the far one", table: lonlat, bbox: box(49, 49, 51, 51), want: 1},
		{name: "nothing there", table: lonlat, bbox: box(100, -10, 110, 0), want: 0},
		{name: "west of the meridian", table: lonlat, bbox: box(-4, 0, -2, 2), want: 1},
		{name: "everything", table: lonlat, bbox: world, want: 7},
		{name: "web mercator, in", table: merc, bbox: box(9, 9, 11, 11), want: 1},
		{name: "web mercator, out", table: merc, bbox: box(0, 0, 5, 5), want: 0},
		{name: "utm, in", table: utm, bbox: box(8.9, 44.9, 9.1, 45.1), want: 1, noTransform: true},
		{name: "not finished, in", table: unindexed, bbox: box(0, 0, 2, 2), want: 2},
		{name: "not finished, everything", table: unindexed, bbox: world, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := s.CountFeatures(ctx, tt.table, tt.bbox)
			if tt.noTransform && errors.Is(err, store.ErrNoTransform) {
				return
			}
			if err != nil || n != tt.want {
				t.Errorf("CountFeatures(%s, %v) = %d (%v), want %d", tt.table.Name, tt.bbox, n, err, tt.want)
			}
		})
	}
}
