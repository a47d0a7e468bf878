package storetest

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// utmPoint is lonLatPoint in EPSG:25832 (ETRS89 / UTM 32N), as PROJ has it; the two
// datums are the same to well under a metre here.
var (
	lonLatPoint = orb.Point{11.5, 48.1}
	utmPoint    = orb.Point{686121.755803486, 5330438.130054}
)

// testReadSRID: FeatureQuery.SRID reads geometries in lon/lat (0), as stored (the
// table's own SRID) or in another CRS, within a millimetre of PROJ; a CRS no store knows
// fails wrapping store.ErrNoTransform.
func testReadSRID(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	cols := []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}
	tables := map[int]orb.Point{4326: lonLatPoint, 25832: utmPoint, 3857: project.WGS84.ToMercator(lonLatPoint)}
	for srid, p := range tables {
		table := &store.FeatureTable{Name: "crs_" + itoa(srid), SRID: srid, Columns: cols}
		if err := s.EnsureFeatureTable(ctx, table); err != nil {
			t.Fatal(err)
		}
		ran(t, s, table.Name, table, []*spatial.Feature{{ID: "p", Geometry: p, Properties: map[string]any{"v": "x"}}})
	}
	tests := []struct {
		name        string
		table, srid int
		want        orb.Point
		tol         float64 // in the unit of srid's CRS
	}{
		{name: "lon/lat as lon/lat", table: 4326, srid: 0, want: lonLatPoint, tol: 1e-12},
		{name: "lon/lat as 4326", table: 4326, srid: 4326, want: lonLatPoint, tol: 1e-12},
		{name: "Mercator as stored", table: 3857, srid: 3857, want: tables[3857], tol: 1e-6},
		{name: "lon/lat in Mercator", table: 4326, srid: 3857, want: tables[3857], tol: 1e-3},
		{name: "UTM as stored", table: 25832, srid: 25832, want: utmPoint, tol: 1e-6},
		{name: "UTM as lon/lat", table: 25832, srid: 0, want: lonLatPoint, tol: 1e-8},
		{name: "lon/lat in UTM", table: 4326, srid: 25832, want: utmPoint, tol: 1e-3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := storedTable(t, tb, "crs_"+itoa(tt.table))
			var got []*store.StoredFeature
			err := tb.ReadFeatures(ctx, st, store.FeatureQuery{SRID: tt.srid}, func(f *store.StoredFeature) error { got = append(got, f); return nil })
			if err != nil || len(got) != 1 {
				t.Fatalf("read %d features, %v; want 1", len(got), err)
			}
			if !sameShape(got[0].Geometry, tt.want, tt.tol) {
				t.Errorf("geometry %v, want %v (within %g)", got[0].Geometry, tt.want, tt.tol)
			}
		})
	}
	st := storedTable(t, tb, "crs_4326")
	err := tb.ReadFeatures(ctx, st, store.FeatureQuery{SRID: 990001}, func(*store.StoredFeature) error { return nil })
	if !errors.Is(err, store.ErrNoTransform) {
		t.Errorf("reading in EPSG:990001, a CRS nobody has: %v, want store.ErrNoTransform", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// testReadWhere: FeatureQuery.Where keeps the rows its expression holds for, with the
// other conditions, and is refused, before anything is read, when it is not one
// expression; an expression the database refuses fails the read.
func testReadWhere(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	ran(t, s, "parcels", table, mapFeatures())
	st := storedTable(t, tb, table.Name)
	tests := []struct {
		name string
		q    store.FeatureQuery
		want []string // sorted; nil: refused
	}{
		{name: "a text column", q: store.FeatureQuery{Where: "name = 'two'"}, want: []string{"v.2"}},
		{name: "a number and a null", q: store.FeatureQuery{Where: "n < 2 OR area IS NULL"}, want: []string{"v.1", "v.3", "v.4", "v.5", "v.6"}},
		{name: "a quoted identifier and LIKE", q: store.FeatureQuery{Where: `"name" LIKE '%in B'`}, want: []string{"v.4"}},
		{name: "with a bbox", q: store.FeatureQuery{Where: "name <> 'one'", BBox: ptr(tileA.Bound())}, want: []string{"v.2", "v.3"}},
		{name: "nothing", q: store.FeatureQuery{Where: "1 = 0"}, want: []string{}},
		{name: "a second statement", q: store.FeatureQuery{Where: "true; DELETE FROM parcels"}},
		{name: "breaking out of its parentheses", q: store.FeatureQuery{Where: "false) OR (true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := tb.ReadFeatures(ctx, st, tt.q, func(f *store.StoredFeature) error { got = append(got, f.ID); return nil })
			if tt.want == nil {
				if !errors.Is(err, store.ErrWhere) || len(got) != 0 {
					t.Errorf("read %q, %v; want nothing, refused wrapping store.ErrWhere", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if slices.Sort(got); !slices.Equal(append([]string{}, got...), tt.want) {
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
	err := tb.ReadFeatures(ctx, st, store.FeatureQuery{Where: "name = 'nobody' OR n IN (SELECT 1 FROM nowhere_at_all)"}, func(*store.StoredFeature) error { return nil })
	if err == nil {
		t.Errorf("a Where naming a table that does not exist: no error")
	}
	if n := len(readAll(t, tb, st, store.FeatureQuery{})); n != len(mapFeatures()) {
		t.Errorf("after the refused expressions the table has %d rows, want %d", n, len(mapFeatures()))
	}
}

// testReadFeaturesOnly: FeatureQuery.FeaturesOnly reads each row's id, geometry and
// properties as a full read does, its bookkeeping left zero; AnyOrder reads the same
// rows, in any order; both with the other conditions.
func testReadFeaturesOnly(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	ran(t, s, "parcels", table, mapFeatures())
	st := storedTable(t, tb, table.Name)
	full := map[string]*store.StoredFeature{}
	for _, f := range readAll(t, tb, st, store.FeatureQuery{}) {
		full[f.ID] = f
	}
	tests := []struct {
		name string
		q    store.FeatureQuery
		want int
	}{
		{name: "features only", q: store.FeatureQuery{FeaturesOnly: true}, want: len(full)},
		{name: "any order", q: store.FeatureQuery{AnyOrder: true}, want: len(full)},
		{name: "both", q: store.FeatureQuery{FeaturesOnly: true, AnyOrder: true}, want: len(full)},
		{name: "both, with a bbox and a where", q: store.FeatureQuery{FeaturesOnly: true, AnyOrder: true, BBox: ptr(tileA.Bound()), Where: "name <> 'one'"}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, tb, st, tt.q)
			if len(got) != tt.want {
				t.Fatalf("read %d rows, want %d", len(got), tt.want)
			}
			for _, f := range got {
				w := full[f.ID]
				if w == nil {
					t.Fatalf("read %q, which a full read does not", f.ID)
				}
				if !sameShape(f.Geometry, w.Geometry, 0) || !reflect.DeepEqual(f.Properties, w.Properties) {
					t.Errorf("%s: %v %v, a full read gives %v %v", f.ID, f.Geometry, f.Properties, w.Geometry, w.Properties)
				}
				bare := f.TileID == 0 && f.RunID == 0 && f.FetchedAt.IsZero() && f.Key == ""
				if bare != tt.q.FeaturesOnly {
					t.Errorf("%s: tile id %d, run %d, fetched %v; want them zero only with FeaturesOnly", f.ID, f.TileID, f.RunID, f.FetchedAt)
				}
			}
			testReadRows(t, tb, st, tt.q, full, tt.want)
		})
	}
}

// testReadRows: store.RowReader reads q's rows as ReadFeatures does, their values in
// column order.
func testReadRows(t *testing.T, tb store.Tables, st store.StoredTable, q store.FeatureQuery, full map[string]*store.StoredFeature, want int) {
	t.Helper()
	rr, ok := tb.(store.RowReader)
	if !ok {
		t.Fatalf("%T is not a store.RowReader", tb)
	}
	n := 0
	err := rr.ReadRows(t.Context(), st, q, func(r *store.FeatureRow) error {
		n++
		w := full[r.ID]
		if w == nil || len(r.Values) != len(st.Columns) || !sameShape(r.Geometry, w.Geometry, 0) {
			t.Errorf("row %q: %v, %d values; a full read gives %v, %d columns", r.ID, r.Geometry, len(r.Values), w, len(st.Columns))
			return nil
		}
		for i, c := range st.Columns {
			if v, ok := w.Properties[c.Name]; r.Values[i] != v || (r.Values[i] == nil) == ok {
				t.Errorf("row %q: %s %#v, a full read gives %#v", r.ID, c.Name, r.Values[i], v)
			}
		}
		return nil
	})
	if err != nil || n != want {
		t.Errorf("ReadRows: %d rows, %v; want %d", n, err, want)
	}
}
