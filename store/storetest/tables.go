package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// The tests of store.Tables (what the web UI's maps and downloads read) draw around two
// neighbouring z14 tiles in Munich: tileA and, east of it, tileB.
var (
	tileA = maptile.New(8715, 5688, 14)
	tileB = maptile.New(8716, 5688, 14)
)

// at is the lon/lat at fraction fx east and fy south of tile A's north-west corner: fx
// from 1 to 2 is in tile B, a negative fx in the tile west of A.
func at(fx, fy float64) orb.Point {
	b := tileA.Bound()
	return orb.Point{b.Min[0] + fx*(b.Max[0]-b.Min[0]), b.Max[1] - fy*(b.Max[1]-b.Min[1])}
}

// square is the square ring from at(fx, fy) to at(fx+d, fy+d).
func square(fx, fy, d float64) orb.Ring {
	return orb.Ring{at(fx, fy), at(fx, fy+d), at(fx+d, fy+d), at(fx+d, fy), at(fx, fy)}
}

// mapFeatures are features of typedTable around tiles A and B. Their geometries are
// points, axis-parallel squares and lines, whose boxes meet a tile exactly when they do.
func mapFeatures() []*spatial.Feature {
	return []*spatial.Feature{
		{ID: "v.1", Geometry: at(0.25, 0.25), Properties: map[string]any{
			"Name": "one", "N": float64(1), "Area": 1.5, "OK": true, "Day": "2024-05-01",
			"At": "2024-05-01T10:00:00Z", "Attrs": map[string]any{"a": 1.0}, "Extra": "not a column"}},
		{ID: "v.2", Geometry: orb.Polygon{square(0.5, 0.5, 0.1)}, Properties: map[string]any{
			"Name": "two", "N": "2", "Area": "2.25", "OK": "yes", "Day": nil, "At": "2024-05-02T10:00:00.5+02:00"}},
		{ID: "v.3", Geometry: orb.LineString{at(0.9, 0.3), at(1.1, 0.3)}, Properties: map[string]any{
			"Name": "three, crossing into B", "N": int64(-3), "OK": "f"}},
		{ID: "v.4", Geometry: at(1.5, 0.5), Properties: map[string]any{"Name": "four, in B"}},
		{ID: "v.5", Geometry: at(-0.005, 0.5), Properties: map[string]any{"Name": "five, a hair west of A"}},
		{ID: "v.6", Geometry: at(40, 40), Properties: map[string]any{"Name": "six, far"}},
	}
}

// boundOf is the box of the geometries of fs.
func boundOf(fs ...*spatial.Feature) orb.Bound {
	b := fs[0].Geometry.Bound()
	for _, f := range fs[1:] {
		b = b.Union(f.Geometry.Bound())
	}
	return b
}

// nearBound tells whether two optional boxes are within tol of each other.
func nearBound(got *orb.Bound, want orb.Bound, tol float64) bool {
	if got == nil {
		return false
	}
	for i := range 2 {
		if math.Abs(got.Min[i]-want.Min[i]) > tol || math.Abs(got.Max[i]-want.Max[i]) > tol {
			return false
		}
	}
	return true
}

// ran is a run of flow writing pages into table as task "a", one unit each, finished and
// closed (a GeoPackage store starts a flow's next run only then).
func ran(t *testing.T, s store.Store, flow string, table *store.FeatureTable, pages ...[]*spatial.Feature) *store.Run {
	t.Helper()
	run := startRun(t, s, store.RunStart{Flow: flow})
	addUnits(t, s, run.ID, "a", len(pages))
	for i, p := range pages {
		writeFeatures(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)}, table, p...)
	}
	finishRun(t, s, run, store.Done, "")
	return run
}

// tablesOf is s as store.Tables.
func tablesOf(t *testing.T, s store.Store) store.Tables {
	t.Helper()
	tb, ok := s.(store.Tables)
	if !ok {
		t.Fatalf("%T does not implement store.Tables", s)
	}
	return tb
}

// storedTable is StoredTable(ctx, "", name), which must succeed.
func storedTable(t *testing.T, tb store.Tables, name string) store.StoredTable {
	t.Helper()
	st, err := tb.StoredTable(t.Context(), "", name)
	if err != nil {
		t.Fatalf("StoredTable(%q): %v", name, err)
	}
	return st
}

// storedNames are the names of cols.
func storedNames(cols []store.StoredColumn) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// columnNames are the names of cols.
func columnNames(cols []store.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// wantProperties are the properties a store gives back of f written into table: each
// column whose value is not null, by column name, normalised (normValue).
func wantProperties(t *testing.T, table *store.FeatureTable, f *spatial.Feature) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, c := range table.Columns {
		v, ok := f.Properties[c.Property]
		if !ok || v == nil {
			continue
		}
		s, err := store.ColumnText(v, c.Type)
		if err != nil {
			t.Fatalf("feature %s: %s: %v", f.ID, c.Property, err)
		}
		if s == "" && c.Type != store.TypeText {
			continue
		}
		var typed any = s
		switch c.Type {
		case store.TypeBigint, store.TypeDouble, store.TypeNumeric:
			typed, err = strconv.ParseFloat(s, 64)
		case store.TypeBoolean:
			typed = s == "true"
		}
		if err != nil {
			t.Fatal(err)
		}
		n, err := normValue(c.Type, typed)
		if err != nil {
			t.Fatalf("feature %s: %s: %v", f.ID, c.Property, err)
		}
		out[c.Name] = n
	}
	return out
}

// normValue brings a property value a store gave back to one comparable form by the
// column's type: numbers (which must be Go numbers, not text) as float64, booleans as
// bool, timestamps (RFC 3339 text) as UTC RFC 3339, JSON as its compact text, dates and
// text as they are.
func normValue(typ store.ColumnType, v any) (any, error) {
	switch typ {
	case store.TypeBigint, store.TypeDouble, store.TypeNumeric:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		case int64:
			return float64(x), nil
		case int32:
			return float64(x), nil
		case int:
			return float64(x), nil
		}
		return nil, fmt.Errorf("%v (%T) is not a number", v, v)
	case store.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("%v (%T) is not a bool", v, v)
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%v (%T) is not text", v, v)
	}
	switch typ {
	case store.TypeTimestamptz:
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not RFC 3339: %w", s, err)
		}
		return ts.UTC().Format(time.RFC3339Nano), nil
	case store.TypeDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date: %w", s, err)
		}
	case store.TypeJSONB:
		var x any
		if err := json.Unmarshal([]byte(s), &x); err != nil {
			return nil, fmt.Errorf("%q is not JSON: %w", s, err)
		}
		b, _ := json.Marshal(x)
		return string(b), nil
	}
	return s, nil
}

// gotProperties normalises the properties of table's columns in props (normValue) and
// returns the others as they are.
func gotProperties(table *store.FeatureTable, props map[string]any) (cols, others map[string]any, err error) {
	cols, others = map[string]any{}, map[string]any{}
	types := map[string]store.ColumnType{}
	for _, c := range table.Columns {
		types[c.Name] = c.Type
	}
	for k, v := range props {
		typ, ok := types[k]
		if !ok {
			others[k] = v
			continue
		}
		if cols[k], err = normValue(typ, v); err != nil {
			return nil, nil, fmt.Errorf("property %s: %w", k, err)
		}
	}
	return cols, others, nil
}

// testStoredTables: StoredTables lists the feature tables geoflow wrote (append, mirror,
// history, Web Mercator, empty) with their columns, flags, counts and lon/lat extents,
// and nothing else; StoredTable describes each the same, and fails wrapping
// store.ErrNotFound for any other name.
func testStoredTables(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	parcels := typedTable("parcels", store.ModeAppend)
	mirror := mirrorTable("mirror", false)
	hist := mirrorTable("hist", true)
	merc := &store.FeatureTable{Name: "merc", SRID: 3857, Columns: []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}}
	empty := &store.FeatureTable{Name: "empty", SRID: 4326, Columns: merc.Columns}
	for _, tab := range []*store.FeatureTable{parcels, mirror, hist, merc, empty} {
		if err := s.EnsureFeatureTable(ctx, tab); err != nil {
			t.Fatal(err)
		}
	}
	fs := mapFeatures()
	ran(t, s, "parcels", parcels, fs)
	if err := s.FinishFeatureTable(ctx, parcels); err != nil {
		t.Fatal(err)
	}
	a, b := parcel("p.a", at(0.1, 0.1)[0], at(0.1, 0.1)[1], "a"), parcel("p.b", at(0.2, 0.2)[0], at(0.2, 0.2)[1], "b")
	a2 := parcel("p.a", at(0.3, 0.3)[0], at(0.3, 0.3)[1], "a, moved")
	ran(t, s, "mirror", mirror, []*spatial.Feature{a, b})
	ran(t, s, "hist", hist, []*spatial.Feature{a, b})
	ran(t, s, "hist", hist, []*spatial.Feature{a2, b})
	lonlat := []orb.Point{{11.5, 48.1}, {11.6, 48.2}}
	mercFs := []*spatial.Feature{
		{ID: "m.1", Geometry: project.WGS84.ToMercator(lonlat[0]), Properties: map[string]any{"v": "1"}},
		{ID: "m.2", Geometry: project.WGS84.ToMercator(lonlat[1]), Properties: map[string]any{"v": "2"}},
	}
	ran(t, s, "merc", merc, mercFs)

	want := []struct {
		table           *store.FeatureTable
		keyed, history  bool
		rows, versions  int64
		extent          *orb.Bound
		srid            int
		extentTolerance float64
	}{
		{table: empty, srid: 4326},
		{table: hist, keyed: true, history: true, rows: 2, versions: 3, extent: ptr(boundOf(a2, b)), srid: 4326},
		{table: merc, rows: 2, versions: 2, extent: &orb.Bound{Min: lonlat[0], Max: lonlat[1]}, srid: 3857, extentTolerance: 1e-9},
		{table: mirror, keyed: true, rows: 2, versions: 2, extent: ptr(boundOf(a, b)), srid: 4326},
		{table: parcels, rows: int64(len(fs)), versions: int64(len(fs)), extent: ptr(boundOf(fs...)), srid: 4326},
	}
	listed, err := tb.StoredTables(ctx)
	if err != nil {
		t.Fatalf("StoredTables: %v", err)
	}
	var names []string
	for _, st := range listed {
		names = append(names, st.Schema+"."+st.Name)
	}
	if len(listed) != len(want) || !slices.IsSorted(names) {
		t.Fatalf("StoredTables listed %q, want the %d feature tables the test wrote, by schema and name", names, len(want))
	}
	for i, w := range want {
		st := listed[i]
		t.Run(w.table.Name, func(t *testing.T) {
			if st.Name != w.table.Name || st.Schema == "" || st.Kind != store.KindFeatures || st.SRID != w.srid {
				t.Errorf("listed %s.%s kind %q SRID %d, want %s, kind features, SRID %d", st.Schema, st.Name, st.Kind, st.SRID, w.table.Name, w.srid)
			}
			if got, wantCols := storedNames(st.Columns), columnNames(w.table.Columns); !slices.Equal(got, wantCols) {
				t.Errorf("Columns %q, want %q", got, wantCols)
			}
			for _, c := range st.Columns {
				if c.Type == "" {
					t.Errorf("column %s has no type", c.Name)
				}
			}
			if st.Keyed != w.keyed || st.History != w.history || st.Rows != w.rows || st.Versions != w.versions {
				t.Errorf("Keyed %v, History %v, Rows %d, Versions %d; want %v, %v, %d, %d",
					st.Keyed, st.History, st.Rows, st.Versions, w.keyed, w.history, w.rows, w.versions)
			}
			if w.extent == nil && st.Extent != nil || w.extent != nil && !nearBound(st.Extent, *w.extent, max(w.extentTolerance, 1e-9)) {
				t.Errorf("Extent %s, want %s", fmtBound(st.Extent), fmtBound(w.extent))
			}
			if st.Stamp == "" {
				t.Error("no Stamp")
			}
			for _, schema := range []string{"", st.Schema} {
				if one, err := tb.StoredTable(ctx, schema, st.Name); err != nil || !reflect.DeepEqual(one, st) {
					t.Errorf("StoredTable(%q, %q) = %+v (%v), want what StoredTables listed: %+v", schema, st.Name, one, err, st)
				}
			}
		})
	}
	// Bookkeeping, a history table's view of its current versions, a name nobody used.
	for _, name := range []string{"geoflow_runs", "geoflow_units", "hist_current", "nope"} {
		if st, err := tb.StoredTable(ctx, "", name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("StoredTable(%q) = %+v, %v; want store.ErrNotFound", name, st, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// testTablesStamp: a table's Stamp stays while nothing is written and changes with an
// insert, an update of a keyed feature, and a deletion.
func testTablesStamp(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := mirrorTable("stamped", false)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	a, b, c := parcel("p.a", 1, 1, "a"), parcel("p.b", 2, 2, "b"), parcel("p.c", 3, 3, "c")
	ran(t, s, "m", table, []*spatial.Feature{a, b})
	stamp := func() string {
		t.Helper()
		return storedTable(t, tb, table.Name).Stamp
	}
	before := stamp()
	if again := stamp(); again != before {
		t.Fatalf("Stamp %q, then %q with nothing written between", before, again)
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"an insert", func() { ran(t, s, "m", table, []*spatial.Feature{a, b, c}) }},
		{"an update", func() { ran(t, s, "m", table, []*spatial.Feature{a, parcel("p.b", 2, 2, "b, edited"), c}) }},
		{"a deletion", func() {
			run := startRun(t, s, store.RunStart{Flow: "m"})
			if n, err := s.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run.ID, Task: "a", Keys: []string{"p.a"}}); err != nil || n != 1 {
				t.Fatalf("DeleteFeatures(p.a) = %d, %v; want 1", n, err)
			}
			finishRun(t, s, run, store.Done, "")
		}},
	}
	for _, st := range steps {
		st.change()
		after := stamp()
		if after == before {
			t.Errorf("after %s the Stamp is still %q", st.name, after)
		}
		before = after
	}
	if n := storedTable(t, tb, table.Name).Rows; n != 2 {
		t.Errorf("Rows = %d, want 2 (b and c)", n)
	}
}

// readAll reads what q selects of t.
func readAll(t *testing.T, tb store.Tables, st store.StoredTable, q store.FeatureQuery) []*store.StoredFeature {
	t.Helper()
	var out []*store.StoredFeature
	err := tb.ReadFeatures(t.Context(), st, q, func(f *store.StoredFeature) error {
		out = append(out, f)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadFeatures(%s, %+v): %v", st.Name, q, err)
	}
	return out
}

// ids lists the feature ids of fs.
func ids(fs []*store.StoredFeature) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

// testReadFeatures: ReadFeatures gives back each row as written (id, TileID, run,
// geometry in lon/lat, typed properties), in a stable order, selected by box, TileID and
// Limit, and stops at fn's error and returns it.
func testReadFeatures(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	fs := mapFeatures()
	run := ran(t, s, "parcels", table, fs)
	st := storedTable(t, tb, table.Name)
	byID := map[string]*spatial.Feature{}
	for _, f := range fs {
		byID[f.ID] = f
	}

	all := readAll(t, tb, st, store.FeatureQuery{})
	if got := ids(all); len(got) != len(fs) {
		t.Fatalf("ReadFeatures read %q, want the %d features written", got, len(fs))
	}
	for _, f := range all {
		w := byID[f.ID]
		if w == nil {
			t.Errorf("read a feature %q nobody wrote", f.ID)
			continue
		}
		hash := spatial.PayloadHash(w)
		if f.TileID != store.TileID(hash[:]) || f.Key != "" || f.RunID != run.ID || f.ClosedRun != 0 || f.ValidFrom != nil || f.ValidTo != nil {
			t.Errorf("%s: TileID %d, Key %q, RunID %d, ClosedRun %d, ValidFrom %v, ValidTo %v; want %d, no key, run %d, no history",
				f.ID, f.TileID, f.Key, f.RunID, f.ClosedRun, f.ValidFrom, f.ValidTo, store.TileID(hash[:]), run.ID)
		}
		near(t, f.ID+" FetchedAt", f.FetchedAt, time.Now(), time.Minute)
		if !orb.Equal(f.Geometry, w.Geometry) {
			t.Errorf("%s: geometry %v, want %v", f.ID, f.Geometry, w.Geometry)
		}
		got, others, err := gotProperties(table, f.Properties)
		if err != nil || len(others) != 0 || !reflect.DeepEqual(got, wantProperties(t, table, w)) {
			t.Errorf("%s: properties %v (%v), others %v; want %v", f.ID, got, err, others, wantProperties(t, table, w))
		}
	}
	if again := ids(readAll(t, tb, st, store.FeatureQuery{})); !slices.Equal(again, ids(all)) {
		t.Errorf("read again in the order %q, first %q: want a stable order", again, ids(all))
	}
	hash2 := spatial.PayloadHash(byID["v.2"])
	box := func(p orb.Point, d float64) *orb.Bound {
		return &orb.Bound{Min: orb.Point{p[0] - d, p[1] - d}, Max: orb.Point{p[0] + d, p[1] + d}}
	}
	tests := []struct {
		name string
		q    store.FeatureQuery
		want []string // sorted
	}{
		{name: "a box around v.1", q: store.FeatureQuery{BBox: box(at(0.25, 0.25), 1e-5)}, want: []string{"v.1"}},
		{name: "tile A's box", q: store.FeatureQuery{BBox: ptr(tileA.Bound())}, want: []string{"v.1", "v.2", "v.3"}},
		{name: "a box the line crosses", q: store.FeatureQuery{BBox: &orb.Bound{Min: at(0.95, 0.35), Max: at(1.05, 0.25)}}, want: []string{"v.3"}},
		{name: "an empty box", q: store.FeatureQuery{BBox: box(at(0.75, 0.75), 1e-5)}, want: []string{}},
		{name: "v.2's TileID", q: store.FeatureQuery{TileID: store.TileID(hash2[:])}, want: []string{"v.2"}},
		{name: "a TileID nobody has", q: store.FeatureQuery{TileID: store.TileID(hash2[:]) ^ 1}, want: []string{}},
		{name: "limit", q: store.FeatureQuery{Limit: 2}, want: slices.Sorted(slices.Values(ids(all)[:2]))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slices.Sorted(slices.Values(ids(readAll(t, tb, st, tt.q)))); !slices.Equal(got, tt.want) {
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
	stop := errors.New("enough")
	calls := 0
	err := tb.ReadFeatures(ctx, st, store.FeatureQuery{}, func(*store.StoredFeature) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ReadFeatures with fn failing: %v after %d calls, want fn's error after 1", err, calls)
	}
	testReadMercator(t, s)
}

// testReadMercator: a table in EPSG:3857 is read in lon/lat, or (a store that cannot
// transform) fails wrapping store.ErrNoTransform.
func testReadMercator(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := &store.FeatureTable{Name: "merc", SRID: 3857, Columns: []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	ring := orb.Ring{{11.5, 48.1}, {11.5, 48.2}, {11.6, 48.2}, {11.6, 48.1}, {11.5, 48.1}}
	lonlat := map[string]orb.Geometry{"m.1": orb.Point{11.55, 48.15}, "m.2": orb.Polygon{ring}}
	var fs []*spatial.Feature
	for _, id := range []string{"m.1", "m.2"} {
		fs = append(fs, &spatial.Feature{ID: id, Geometry: project.Geometry(orb.Clone(lonlat[id]), project.WGS84.ToMercator), Properties: map[string]any{"v": id}})
	}
	ran(t, s, "merc", table, fs)
	st := storedTable(t, tb, table.Name)
	var got []*store.StoredFeature
	err := tb.ReadFeatures(ctx, st, store.FeatureQuery{BBox: &orb.Bound{Min: orb.Point{11.54, 48.14}, Max: orb.Point{11.56, 48.16}}},
		func(f *store.StoredFeature) error { got = append(got, f); return nil })
	if errors.Is(err, store.ErrNoTransform) {
		t.Logf("ReadFeatures of a table in EPSG:3857: %v (accepted: the store cannot transform)", err)
		return
	}
	if err != nil || len(got) != 2 {
		t.Fatalf("ReadFeatures of a table in EPSG:3857 in a box inside both = %q, %v; want both", ids(got), err)
	}
	for _, f := range got {
		want := lonlat[f.ID]
		if !sameShape(f.Geometry, want, 1e-9) {
			t.Errorf("%s: geometry %v, want %v in lon/lat", f.ID, f.Geometry, want)
		}
	}
}

// sameShape tells whether a and b are the same geometry, coordinates within tol.
func sameShape(a, b orb.Geometry, tol float64) bool {
	if a == nil || b == nil || a.GeoJSONType() != b.GeoJSONType() {
		return false
	}
	var pa, pb []orb.Point
	collect := func(out *[]orb.Point) func(orb.Point) orb.Point {
		return func(p orb.Point) orb.Point { *out = append(*out, p); return p }
	}
	project.Geometry(orb.Clone(a), collect(&pa))
	project.Geometry(orb.Clone(b), collect(&pb))
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if math.Abs(pa[i][0]-pb[i][0]) > tol || math.Abs(pa[i][1]-pb[i][1]) > tol {
			return false
		}
	}
	return true
}

// testTablesHistory: a table with history is drawn and read as of a run (the versions
// current after it) or now, and every version is read with its life.
func testTablesHistory(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := mirrorTable("hist", true)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	pt := func(id string, fx float64, name string) *spatial.Feature {
		p := at(fx, fx)
		return parcel(id, p[0], p[1], name)
	}
	a, b, c := pt("p.a", 0.1, "a"), pt("p.b", 0.2, "b"), pt("p.c", 0.3, "c")
	a2, d := pt("p.a", 0.4, "a, edited"), pt("p.d", 0.5, "d")
	run1 := ran(t, s, "m", table, []*spatial.Feature{a, b, c})
	// Run 2 edits a, deletes b, adds d.
	run2 := startRun(t, s, store.RunStart{Flow: "m"})
	addUnits(t, s, run2.ID, "a", 1)
	writeFeatures(t, s, store.UnitRef{RunID: run2.ID, TaskID: "a", Key: unitKey(0)}, table, a2, c, d)
	if n, err := s.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run2.ID, Task: "a", Keys: []string{"p.b"}}); err != nil || n != 1 {
		t.Fatalf("DeleteFeatures(p.b) = %d, %v; want 1", n, err)
	}
	finishRun(t, s, run2, store.Done, "")
	st := storedTable(t, tb, table.Name)
	if st.Rows != 3 || st.Versions != 5 || !st.Keyed || !st.History {
		t.Errorf("StoredTable: Rows %d, Versions %d, Keyed %v, History %v; want 3 current of 5 versions, keyed, history", st.Rows, st.Versions, st.Keyed, st.History)
	}
	runOf := map[*spatial.Feature]int64{a: run1.ID, b: run1.ID, c: run1.ID, a2: run2.ID, d: run2.ID}
	for _, tt := range []struct {
		name  string
		asOf  int64
		drawn []*spatial.Feature
	}{
		{name: "as of run 1", asOf: run1.ID, drawn: []*spatial.Feature{a, b, c}},
		{name: "as of run 2", asOf: run2.ID, drawn: []*spatial.Feature{a2, c, d}},
		{name: "now", drawn: []*spatial.Feature{a2, c, d}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeTile(t, vectorTile(t, tb, st, tileA, store.TileQuery{AsOfRun: tt.asOf}), table.Name)
			if len(got) != len(tt.drawn) {
				t.Errorf("the tile holds %d features, want %d", len(got), len(tt.drawn))
			}
			for _, f := range tt.drawn {
				if tf, ok := got[tileID(f)]; !ok {
					t.Errorf("%s (%s) is not drawn", f.ID, f.Properties["name"])
				} else {
					checkTileFeature(t, table, f, tf, runOf[f], tileA)
				}
			}
			read := readAll(t, tb, st, store.FeatureQuery{AsOfRun: tt.asOf})
			if len(read) != len(tt.drawn) {
				t.Errorf("ReadFeatures read %q, want %s", ids(read), featureIDs(tt.drawn))
			}
		})
	}
	checkVersions(t, tb, st, run1.ID, run2.ID)
}

// checkVersions reads every version of testTablesHistory's table, and a's alone.
func checkVersions(t *testing.T, tb store.Tables, st store.StoredTable, run1, run2 int64) {
	t.Helper()
	type life struct {
		name       string
		closed     int64
		hasValidTo bool
	}
	want := map[[2]any]life{ // by id and opening run
		{"p.a", run1}: {"a", run2, true}, {"p.a", run2}: {"a, edited", 0, false},
		{"p.b", run1}: {"b", run2, true}, {"p.c", run1}: {"c", 0, false}, {"p.d", run2}: {"d", 0, false},
	}
	all := readAll(t, tb, st, store.FeatureQuery{AllVersions: true})
	if len(all) != len(want) {
		t.Errorf("AllVersions read %d versions, want %d", len(all), len(want))
	}
	for _, f := range all {
		w, ok := want[[2]any{f.ID, f.RunID}]
		if !ok {
			t.Errorf("a version of %s opened by run %d nobody wrote", f.ID, f.RunID)
			continue
		}
		if f.Key != f.ID || f.Properties["name"] != w.name || f.ClosedRun != w.closed || (f.ValidTo != nil) != w.hasValidTo || f.ValidFrom == nil {
			t.Errorf("%s of run %d: key %q, name %v, closed by %d, valid %v to %v; want the id as key, name %q, closed by %d, valid to set %v",
				f.ID, f.RunID, f.Key, f.Properties["name"], f.ClosedRun, f.ValidFrom, f.ValidTo, w.name, w.closed, w.hasValidTo)
		}
		if f.ValidFrom != nil && f.ValidTo != nil && f.ValidTo.Before(*f.ValidFrom) {
			t.Errorf("%s of run %d: valid from %v to %v, which is earlier", f.ID, f.RunID, f.ValidFrom, f.ValidTo)
		}
	}
	versions := readAll(t, tb, st, store.FeatureQuery{Key: "p.a", AllVersions: true})
	slices.SortFunc(versions, func(x, y *store.StoredFeature) int { return int(x.RunID - y.RunID) })
	if len(versions) != 2 || versions[0].Properties["name"] != "a" || versions[1].Properties["name"] != "a, edited" {
		t.Errorf("a's versions: %d, want a then a, edited", len(versions))
	}
	if cur := readAll(t, tb, st, store.FeatureQuery{Key: "p.a"}); len(cur) != 1 || cur[0].RunID != run2 {
		t.Errorf("a now: %d rows, want its version of run 2", len(cur))
	}
	if none := readAll(t, tb, st, store.FeatureQuery{Key: "p.b"}); len(none) != 0 {
		t.Errorf("b now: %d rows, want none (deleted)", len(none))
	}
}
