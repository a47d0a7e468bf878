package gpkg_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// readProperties are the properties ReadFeatures gives f: its columns typed as SQLite
// holds them, nulls left out.
func readProperties(f *spatial.Feature) map[string]any {
	props := map[string]any{}
	for k, v := range f.Properties {
		switch {
		case v == nil:
		case k == "n":
			props[k] = int64(v.(float64))
		case k == "at":
			props[k] = "2024-05-01T10:00:00.000Z"
		default:
			props[k] = v
		}
	}
	return props
}

// sameGeom tells whether two geometries have the same type and coordinates within tol.
func sameGeom(a, b orb.Geometry, tol float64) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	var pa, pb []orb.Point
	collect := func(dst *[]orb.Point) orb.Projection {
		return func(p orb.Point) orb.Point { *dst = append(*dst, p); return p }
	}
	project.Geometry(orb.Clone(a), collect(&pa))
	project.Geometry(orb.Clone(b), collect(&pb))
	return slices.EqualFunc(pa, pb, func(p, q orb.Point) bool { return math.Abs(p[0]-q[0]) <= tol && math.Abs(p[1]-q[1]) <= tol })
}

// TestReadFeatures reads rows of tables in lon/lat, Web Mercator and with history by
// each selector: in fid order, geometries in lon/lat, typed properties, versions with
// their runs and lives; fn's error stops the read, and a table in a CRS the store
// cannot transform fails wrapping store.ErrNoTransform.
func TestReadFeatures(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	fs := gridFeatures()[:60]
	before := time.Now().Add(-time.Second)
	run := writeTable(t, st, &store.FeatureTable{Name: "lonlat", SRID: 4326, Columns: typedColumns}, fs...)
	mercs := make([]*spatial.Feature, len(fs))
	for i, f := range fs {
		mercs[i] = &spatial.Feature{ID: f.ID, Geometry: project.Geometry(orb.Clone(f.Geometry), project.WGS84.ToMercator), Properties: f.Properties}
	}
	writeTable(t, st, &store.FeatureTable{Name: "mercator", SRID: 3857, Mode: store.ModeMirror, Columns: typedColumns}, mercs...)
	writeTable(t, st, &store.FeatureTable{Name: "utm", SRID: 25832}, &spatial.Feature{ID: "u", Geometry: orb.Point{690000, 5330000}})
	writeTable(t, st, &store.FeatureTable{Name: "bng", SRID: 27700}, &spatial.Feature{ID: "b", Geometry: orb.Point{530000, 180000}})
	hist := &store.FeatureTable{Name: "history", SRID: 4326, Mode: store.ModeMirror, History: true, Columns: typedColumns[:1]}
	h := func(id, name string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: orb.Point{11, 48}, Properties: map[string]any{"name": name}}
	}
	r1 := writeTable(t, st, hist, h("a", "a1"), h("b", "b1")).ID
	r2 := writeTable(t, st, hist, h("a", "a2"), h("b", "b1")).ID

	bbox := orb.Bound{Min: orb.Point{11.5045, 48.1}, Max: orb.Point{11.5125, 48.1065}}
	var inBBox []*spatial.Feature
	for _, f := range fs {
		if bbox.Intersects(f.Geometry.Bound()) {
			inBBox = append(inBBox, f)
		}
	}
	tests := []struct {
		name  string
		table string
		q     store.FeatureQuery
		want  []*spatial.Feature // in order; nil for the history cases, which check versions
		key   bool
		check func(t *testing.T, got []*store.StoredFeature)
		err   error
	}{
		{name: "all", table: "lonlat", want: fs},
		{name: "bbox", table: "lonlat", q: store.FeatureQuery{BBox: &bbox}, want: inBBox},
		{name: "tile id", table: "lonlat", q: store.FeatureQuery{TileID: tileID(fs[7])}, want: fs[7:8]},
		{name: "limit", table: "lonlat", q: store.FeatureQuery{Limit: 5}, want: fs[:5]},
		{name: "bbox and limit", table: "lonlat", q: store.FeatureQuery{BBox: &bbox, Limit: 2}, want: inBBox[:2]},
		{name: "web mercator, bbox", table: "mercator", q: store.FeatureQuery{BBox: &bbox}, want: inBBox, key: true},
		{name: "web mercator, key", table: "mercator", q: store.FeatureQuery{Key: fs[3].ID}, want: fs[3:4], key: true},
		{name: "web mercator, tile id", table: "mercator", q: store.FeatureQuery{TileID: tileID(mercs[9])}, want: fs[9:10], key: true},
		{name: "a key of an unkeyed table", table: "lonlat", q: store.FeatureQuery{Key: "g.0.0"}},
		{name: "history, current", table: "history", check: versions(version{"b1", r1, 0}, version{"a2", r2, 0})},
		{name: "history, as of run 1", table: "history", q: store.FeatureQuery{AsOfRun: r1},
			check: versions(version{"a1", r1, r2}, version{"b1", r1, 0})},
		{name: "history, every version", table: "history", q: store.FeatureQuery{AllVersions: true, AsOfRun: r1},
			check: versions(version{"a1", r1, r2}, version{"b1", r1, 0}, version{"a2", r2, 0})},
		{name: "history, a key's versions", table: "history", q: store.FeatureQuery{AllVersions: true, Key: "a"},
			check: versions(version{"a1", r1, r2}, version{"a2", r2, 0})},
		{name: "EPSG:25832, in lon/lat", table: "utm", check: func(t *testing.T, got []*store.StoredFeature) {
			// gdaltransform -s_srs EPSG:25832 -t_srs EPSG:4326: 11.5518448043491 48.0949174286119
			if len(got) != 1 || !nearPoint(got[0].Geometry, orb.Point{11.5518448043491, 48.0949174286119}, 1e-12) {
				t.Errorf("read %v, want the point in lon/lat", got)
			}
		}},
		{name: "EPSG:25832, bbox in lon/lat", table: "utm", q: store.FeatureQuery{BBox: &orb.Bound{Min: orb.Point{11.55, 48.09}, Max: orb.Point{11.56, 48.1}}},
			check: func(t *testing.T, got []*store.StoredFeature) {
				if len(got) != 1 || got[0].ID != "u" {
					t.Errorf("read %v, want u", got)
				}
			}},
		{name: "EPSG:25832, bbox beside it", table: "utm", q: store.FeatureQuery{BBox: &orb.Bound{Min: orb.Point{11.56, 48.09}, Max: orb.Point{11.57, 48.1}}},
			check: func(t *testing.T, got []*store.StoredFeature) {
				if len(got) != 0 {
					t.Errorf("read %v, want nothing", got)
				}
			}},
		{name: "EPSG:27700, which the store cannot transform", table: "bng", err: store.ErrNoTransform},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := st.StoredTable(ctx, "", tt.table)
			if err != nil {
				t.Fatal(err)
			}
			var got []*store.StoredFeature
			err = st.ReadFeatures(ctx, table, tt.q, func(f *store.StoredFeature) error {
				got = append(got, f)
				return nil
			})
			if !errors.Is(err, tt.err) {
				t.Fatalf("ReadFeatures: %v, want %v", err, tt.err)
			}
			if tt.check != nil {
				tt.check(t, got)
				return
			}
			var ids []string
			for _, f := range got {
				ids = append(ids, f.ID)
			}
			var want []string
			for _, f := range tt.want {
				want = append(want, f.ID)
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("ReadFeatures reads %q, want %q", ids, want)
			}
			for i, f := range got {
				w := tt.want[i]
				if !sameGeom(f.Geometry, w.Geometry, 1e-9) {
					t.Errorf("%s: geometry %v, want %v", f.ID, f.Geometry, w.Geometry)
				}
				if want := readProperties(w); !reflect.DeepEqual(f.Properties, want) {
					t.Errorf("%s: properties\n%#v\nwant\n%#v", f.ID, f.Properties, want)
				}
				wantKey, wantID := "", tileID(w)
				if tt.key {
					wantKey, wantID = w.ID, tileID(mercs[slices.Index(fs, w)])
				}
				if f.Key != wantKey || f.TileID != wantID || f.FetchedAt.Before(before) || f.ValidFrom != nil {
					t.Errorf("%s: key %q, tile id %d, fetched at %v, valid from %v; want %q, %d", f.ID, f.Key, f.TileID, f.FetchedAt, f.ValidFrom, wantKey, wantID)
				}
				if tt.table == "lonlat" && f.RunID != run.ID {
					t.Errorf("%s: run %d, want %d", f.ID, f.RunID, run.ID)
				}
			}
		})
	}
	t.Run("fn's error", func(t *testing.T) {
		table, err := st.StoredTable(ctx, "", "lonlat")
		if err != nil {
			t.Fatal(err)
		}
		stop := errors.New("stop")
		calls := 0
		err = st.ReadFeatures(ctx, table, store.FeatureQuery{}, func(*store.StoredFeature) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Errorf("ReadFeatures = %v after %d calls, want fn's error after one", err, calls)
		}
	})
}

// version is one version of a history table's feature: its name, the runs that opened
// and closed it (0 while current).
type version struct {
	name           string
	opened, closed int64
}

// versions checks the versions a read of the history table gives, in order.
func versions(want ...version) func(t *testing.T, got []*store.StoredFeature) {
	return func(t *testing.T, got []*store.StoredFeature) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d versions, want %d", len(got), len(want))
		}
		for i, f := range got {
			w := want[i]
			if f.Properties["name"] != w.name || f.RunID != w.opened || f.ClosedRun != w.closed {
				t.Errorf("version %d: %v, runs %d-%d; want %q, runs %d-%d", i, f.Properties, f.RunID, f.ClosedRun, w.name, w.opened, w.closed)
			}
			if f.ValidFrom == nil || (f.ValidTo != nil) != (w.closed != 0) || (f.ValidTo != nil && f.ValidTo.Before(*f.ValidFrom)) {
				t.Errorf("version %d: valid %v - %v", i, f.ValidFrom, f.ValidTo)
			}
			if f.Key != w.name[:1] || f.ID != w.name[:1] {
				t.Errorf("version %d: key %q, id %q, want %q", i, f.Key, f.ID, w.name[:1])
			}
		}
	}
}

// TestReadsBesideARun: the maps read while a unit's transaction holds the writer, and
// see only what was committed; a unit commits while a download holds its rows open.
func TestReadsBesideARun(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	table := &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: typedColumns}
	fs := gridFeatures()
	writeTable(t, st, table, fs[:100]...)
	tab, err := st.StoredTable(ctx, "", "parcels")
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.StartRun(ctx, store.RunStart{Flow: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := st.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: "u"}}); err != nil {
		t.Fatal(err)
	}
	tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u"})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	src := sliceSource(fs[100:])
	if c, err := tx.WriteFeatures(ctx, table, &src); err != nil || c.Inserted != 100 {
		t.Fatalf("WriteFeatures = %+v, %v", c, err)
	}
	// The unit holds the writer, uncommitted: every read goes on, within a second, and
	// sees the 100 rows committed before.
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if got, err := st.StoredTable(rctx, "", "parcels"); err != nil || got.Rows != 100 || got.Stamp != tab.Stamp {
		t.Errorf("StoredTable beside an open unit: %d rows, stamp %s (%v); want 100, %s", got.Rows, got.Stamp, err, tab.Stamp)
	}
	tile := maptile.At(orb.Point{11.53, 48.115}, 10)
	if vt, err := st.VectorTile(rctx, tab, store.TileQuery{Z: 10, X: int(tile.X), Y: int(tile.Y)}); err != nil || vt.Features != 100 {
		t.Errorf("VectorTile beside an open unit: %d features, %v; want 100", vt.Features, err)
	}
	// A download reads its first row, and holds the rest while the unit commits.
	read := 0
	err = st.ReadFeatures(rctx, tab, store.FeatureQuery{}, func(*store.StoredFeature) error {
		if read++; read == 1 {
			if err := tx.Complete(ctx, store.Counts{Inserted: 100}, nil, nil, time.Now()); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
		return nil
	})
	if err != nil || read != 100 {
		t.Errorf("ReadFeatures while the unit commits: %d rows, %v; want the 100 of its snapshot", read, err)
	}
	if got, err := st.StoredTable(ctx, "", "parcels"); err != nil || got.Rows != 200 {
		t.Errorf("after the commit StoredTable counts %d rows (%v), want 200", got.Rows, err)
	}
}

// nearPoint tells whether g is a point within tol of want in each coordinate.
func nearPoint(g orb.Geometry, want orb.Point, tol float64) bool {
	p, ok := g.(orb.Point)
	return ok && math.Abs(p[0]-want[0]) <= tol && math.Abs(p[1]-want[1]) <= tol
}
