package gpkg_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// writeTable writes features into table in one run of their own (one unit, one page)
// and builds its R-tree, as a task's run does.
func writeTable(t *testing.T, st *gpkg.Store, table *store.FeatureTable, fs ...*spatial.Feature) *store.Run {
	t.Helper()
	if err := st.EnsureFeatureTable(t.Context(), table); err != nil {
		t.Fatal(err)
	}
	run, _ := mirrorRun(t, st, table, [][]*spatial.Feature{fs})
	endRun(t, st, run)
	if err := st.FinishFeatureTable(t.Context(), table); err != nil {
		t.Fatal(err)
	}
	return run
}

// writeTiles writes tiles into pyramid table in a run of their own.
func writeTiles(t *testing.T, st *gpkg.Store, table *store.TileTable, rows ...store.TileRow) {
	t.Helper()
	ctx := t.Context()
	if err := st.EnsureTileTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run, err := st.StartRun(ctx, store.RunStart{Flow: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := st.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: "t"}}); err != nil {
		t.Fatal(err)
	}
	tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	c, err := tx.UpsertTiles(ctx, table, rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// tileRow is tile z/x/y with content data, as the tiles task records a tile it keeps in
// the store.
func tileRow(z, x, y int, data []byte) store.TileRow {
	tile := maptile.New(uint32(x), uint32(y), maptile.Zoom(z))
	return store.TileRow{Z: z, X: x, Y: y, Footprint: tile.Bound(), Status: store.FileOK, Data: data, Bytes: int64(len(data))}
}

// encodeImage is a 256-pixel square tile in PNG or JPEG.
func encodeImage(t *testing.T, format string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	var buf bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// execFile runs statements on the file through a connection of its own, as another
// program would.
func execFile(t *testing.T, file string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// boundOf is the extent of features' geometries.
func boundOf(fs ...*spatial.Feature) orb.Bound {
	b := fs[0].Geometry.Bound()
	for _, f := range fs[1:] {
		b = b.Union(f.Geometry.Bound())
	}
	return b
}

func nearBound(a *orb.Bound, b orb.Bound, tol float64) bool {
	return a != nil && math.Abs(a.Min[0]-b.Min[0]) <= tol && math.Abs(a.Min[1]-b.Min[1]) <= tol &&
		math.Abs(a.Max[0]-b.Max[0]) <= tol && math.Abs(a.Max[1]-b.Max[1]) <= tol
}

// square is a polygon of side d (degrees) with its south-west corner at x, y.
func square(x, y, d float64) orb.Polygon {
	return orb.Polygon{{{x, y}, {x + d, y}, {x + d, y + d}, {x, y + d}, {x, y}}}
}

// TestStoredTables writes a table of each kind and CRS and a pyramid, next to a table
// another program made: StoredTables lists geoflow's, with their columns, flags, counts,
// extents in lon/lat and zoom levels; StoredTable gives each the same and refuses the
// others with store.ErrNotFound.
func TestStoredTables(t *testing.T) {
	ctx := t.Context()
	st, file := openMirrorStore(t)
	cols := []store.Column{{Name: "name", Property: "name", Type: store.TypeText}, {Name: "n", Property: "n", Type: store.TypeBigint},
		{Name: "ok", Property: "ok", Type: store.TypeBoolean}, {Name: "day", Property: "day", Type: store.TypeDate}}
	feature := func(id string, g orb.Geometry) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: g, Properties: map[string]any{"name": id, "n": float64(len(id)), "ok": true, "day": "2024-05-01"}}
	}
	parcels := []*spatial.Feature{feature("a", square(11.5, 48.1, 0.001)), feature("b", orb.Point{11.61, 48.17}),
		feature("c", orb.LineString{{11.4, 48.05}, {11.45, 48.3}})}
	writeTable(t, st, &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: cols}, parcels...)
	mercs := []*spatial.Feature{feature("m1", merc(11.5, 48.1)), feature("m2", merc(11.7, 48.3))}
	writeTable(t, st, &store.FeatureTable{Name: "roads", SRID: 3857, Mode: store.ModeMirror, Columns: cols[:1]}, mercs...)
	writeTable(t, st, &store.FeatureTable{Schema: "staging", Name: "roads", SRID: 4326, Columns: cols[:1]}, parcels[0])
	writeTable(t, st, &store.FeatureTable{Name: "utm", SRID: 25832, Columns: cols[:1]}, feature("u", orb.Point{690000, 5330000}))
	hist := &store.FeatureTable{Name: "history", SRID: 4326, History: true, Columns: cols[:1]}
	h1, h2 := feature("h1", orb.Point{10, 50}), feature("h2", orb.Point{10.5, 50.5})
	writeTable(t, st, hist, h1, h2)
	// h1 moves: two versions, one current; the closed one lies outside the extent.
	h1moved := feature("h1", orb.Point{10.2, 50.1})
	writeTable(t, st, hist, h1moved, h2)
	pyramid := &store.TileTable{Name: "basemap", InStore: true}
	writeTiles(t, st, pyramid, tileRow(12, 2180, 1421, encodeImage(t, "png")), tileRow(13, 4361, 2843, encodeImage(t, "png")))
	execFile(t, file, `CREATE TABLE foreign_t (fid INTEGER PRIMARY KEY, geom GEOMETRY, name TEXT)`,
		`INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES ('foreign_t', 'features', 'foreign_t', 4326)`,
		`INSERT INTO gpkg_geometry_columns VALUES ('foreign_t', 'geom', 'GEOMETRY', 4326, 0, 0)`)

	tiles := maptile.New(2180, 1421, 12).Bound().Union(maptile.New(4361, 2843, 13).Bound())
	tests := []struct {
		name   string
		want   store.StoredTable
		extent *orb.Bound
	}{
		{name: "basemap", want: store.StoredTable{Kind: store.KindTiles, SRID: 3857, Rows: 2, Versions: 2, MinZoom: 12, MaxZoom: 13},
			extent: &tiles},
		{name: "history", want: store.StoredTable{Kind: store.KindFeatures, SRID: 4326, Keyed: true, History: true, Rows: 2, Versions: 3,
			Columns: []store.StoredColumn{{Name: "name", Type: "TEXT"}}}, extent: ptr(boundOf(h1moved, h2))},
		{name: "parcels", want: store.StoredTable{Kind: store.KindFeatures, SRID: 4326, Rows: 3, Versions: 3,
			Columns: []store.StoredColumn{{Name: "name", Type: "TEXT"}, {Name: "n", Type: "INTEGER"}, {Name: "ok", Type: "BOOLEAN"},
				{Name: "day", Type: "DATE"}}}, extent: ptr(boundOf(parcels...))},
		{name: "roads", want: store.StoredTable{Kind: store.KindFeatures, SRID: 3857, Keyed: true, Rows: 2, Versions: 2,
			Columns: []store.StoredColumn{{Name: "name", Type: "TEXT"}}}, extent: &orb.Bound{Min: orb.Point{11.5, 48.1}, Max: orb.Point{11.7, 48.3}}},
		{name: "staging_roads", want: store.StoredTable{Kind: store.KindFeatures, SRID: 4326, Rows: 1, Versions: 1,
			Columns: []store.StoredColumn{{Name: "name", Type: "TEXT"}}}, extent: ptr(parcels[0].Geometry.Bound())},
		{name: "utm", want: store.StoredTable{Kind: store.KindFeatures, SRID: 25832, Rows: 1, Versions: 1,
			Columns: []store.StoredColumn{{Name: "name", Type: "TEXT"}}},
			// gdaltransform -s_srs EPSG:25832 -t_srs EPSG:4326 of 690000 5330000
			extent: &orb.Bound{Min: orb.Point{11.5518448043491, 48.0949174286119}, Max: orb.Point{11.5518448043491, 48.0949174286119}}},
	}
	list, err := st.StoredTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tab := range list {
		names = append(names, tab.Name)
	}
	if want := []string{"basemap", "history", "parcels", "roads", "staging_roads", "utm"}; !slices.Equal(names, want) {
		t.Fatalf("StoredTables lists %q, want %q", names, want)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := list[i]
			if (got.Extent == nil) != (tt.extent == nil) || (tt.extent != nil && !nearBound(got.Extent, *tt.extent, 1e-9)) {
				t.Errorf("Extent = %v, want %v", got.Extent, tt.extent)
			}
			if got.Stamp == "" {
				t.Error("no Stamp")
			}
			want := tt.want
			want.Schema, want.Name, want.Extent, want.Stamp = "main", tt.name, got.Extent, got.Stamp
			if !reflect.DeepEqual(got, want) {
				t.Errorf("StoredTables gives\n%+v\nwant\n%+v", got, want)
			}
			one, err := st.StoredTable(ctx, "", tt.name)
			if err != nil || !reflect.DeepEqual(one, got) {
				t.Errorf("StoredTable = %+v, %v; want %+v", one, err, got)
			}
		})
	}
	for _, name := range [][2]string{{"staging", "roads"}, {"main", "parcels"}, {"public", "parcels"}} {
		if got, err := st.StoredTable(ctx, name[0], name[1]); err != nil || got.Schema != "main" || got.Name != gpkgName(name[0], name[1]) {
			t.Errorf("StoredTable(%q, %q) = %s.%s, %v", name[0], name[1], got.Schema, got.Name, err)
		}
	}
	for _, name := range []string{"nope", "foreign_t", "geoflow_runs", "history_current", "basemap_index", "gpkg_contents"} {
		if _, err := st.StoredTable(ctx, "", name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("StoredTable(%q): %v, want store.ErrNotFound", name, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// gpkgName is the table name StoredTable gives for a schema and a name.
func gpkgName(schema, name string) string {
	if schema == "staging" {
		return schema + "_" + name
	}
	return name
}

// TestStamp: a table's Stamp stays while nothing is written and changes with every
// insert, update in place, closed version and deletion, however quickly they follow.
func TestStamp(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	point := func(id string, x float64, name string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: orb.Point{x, 48}, Properties: map[string]any{"name": name}}
	}
	cols := []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}
	tables := []*store.FeatureTable{
		{Name: "appended", SRID: 4326, Columns: cols},
		{Name: "upserted", SRID: 4326, Columns: cols, Mode: store.ModeUpsert, Key: []string{"name"}},
		{Name: "mirrored", SRID: 4326, Columns: cols, Mode: store.ModeMirror},
		{Name: "history", SRID: 4326, Columns: cols, Mode: store.ModeMirror, History: true},
	}
	for _, table := range tables {
		t.Run(table.Name, func(t *testing.T) {
			stamp := func() string {
				t.Helper()
				tab, err := st.StoredTable(ctx, "", table.Name)
				if err != nil {
					t.Fatal(err)
				}
				return tab.Stamp
			}
			writeTable(t, st, table, point("a", 11, "a"), point("b", 12, "b"))
			seen := map[string]string{}
			check := func(step string) {
				t.Helper()
				s := stamp()
				if s != stamp() {
					t.Errorf("after %s: the stamp changes without a write", step)
				}
				if prev, ok := seen[s]; ok {
					t.Errorf("after %s: the stamp is the one it was after %s", step, prev)
				}
				seen[s] = step
			}
			check("the first write")
			// Written as a run writes, without FinishFeatureTable (which moves
			// last_change too) after each.
			write := func(fs ...*spatial.Feature) {
				t.Helper()
				run, _ := mirrorRun(t, st, table, [][]*spatial.Feature{fs})
				endRun(t, st, run)
			}
			write(point("c", 13, "c"))
			check("an insert")
			write(point("a", 11.5, "a"))
			check("a change to a")
			write(point("a", 11.75, "a"))
			check("a second change to a, at once")
			if table.Keyed() {
				run, _ := mirrorRun(t, st, table)
				if n, err := st.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run.ID, Task: "a", Keys: []string{"b"}}); err != nil || n != 1 {
					t.Fatalf("DeleteFeatures = %d, %v", n, err)
				}
				endRun(t, st, run)
				check("a deletion")
			}
		})
	}
	t.Run("pyramid", func(t *testing.T) {
		pyramid := &store.TileTable{Name: "basemap", InStore: true}
		var stamps []string
		for _, data := range [][]byte{encodeImage(t, "png"), encodeImage(t, "jpeg")} {
			writeTiles(t, st, pyramid, tileRow(12, 2180, 1421, data))
			tab, err := st.StoredTable(ctx, "", "basemap")
			if err != nil {
				t.Fatal(err)
			}
			stamps = append(stamps, tab.Stamp)
		}
		if stamps[0] == stamps[1] {
			t.Errorf("a tile replaced keeps the stamp %s", stamps[0])
		}
	})
}

// TestRasterTile reads back the tiles of a pyramid written as the tiles task writes it,
// each with its content type; a tile it does not hold fails wrapping store.ErrNotFound,
// and a feature table has no raster tiles.
func TestRasterTile(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	pngTile, jpegTile := encodeImage(t, "png"), encodeImage(t, "jpeg")
	webp := []byte("RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00")
	writeTiles(t, st, &store.TileTable{Name: "basemap", InStore: true},
		tileRow(12, 2180, 1421, pngTile), tileRow(12, 2181, 1421, jpegTile), tileRow(13, 4361, 2843, webp))
	writeTable(t, st, &store.FeatureTable{Name: "parcels", SRID: 4326}, &spatial.Feature{ID: "a", Geometry: orb.Point{11, 48}})
	pyramid, err := st.StoredTable(ctx, "", "basemap")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		z, x, y     int
		data        []byte
		contentType string
	}{
		{name: "png", z: 12, x: 2180, y: 1421, data: pngTile, contentType: "image/png"},
		{name: "jpeg", z: 12, x: 2181, y: 1421, data: jpegTile, contentType: "image/jpeg"},
		{name: "webp", z: 13, x: 4361, y: 2843, data: webp, contentType: "image/webp"},
		{name: "missing", z: 13, x: 4361, y: 2844},
		{name: "TMS row", z: 12, x: 2180, y: 1<<12 - 1 - 1421},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, typ, err := st.RasterTile(ctx, pyramid, tt.z, tt.x, tt.y)
			if tt.data == nil {
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("RasterTile = %d bytes, %v; want store.ErrNotFound", len(data), err)
				}
				return
			}
			if err != nil || !bytes.Equal(data, tt.data) || typ != tt.contentType {
				t.Errorf("RasterTile = %d bytes, %q, %v; want %d bytes, %q", len(data), typ, err, len(tt.data), tt.contentType)
			}
		})
	}
	features, err := st.StoredTable(ctx, "", "parcels")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.RasterTile(ctx, features, 0, 0, 0); err == nil {
		t.Error("RasterTile of a feature table: no error")
	}
}

// mercBound is a lon/lat box in Web Mercator.
func mercBound(b orb.Bound) orb.Bound {
	return orb.Bound{Min: project.WGS84.ToMercator(b.Min), Max: project.WGS84.ToMercator(b.Max)}
}

// TestExtentExact: a table's Extent is its current rows' exactly, not the R-tree's
// float32 boxes', before the R-tree is built and after, after the extreme features of a
// mirror with history moved inward and after the outermost was deleted.
func TestExtentExact(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	rnd := rand.New(rand.NewPCG(3, 4))
	cols := []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}
	table := &store.FeatureTable{Name: "moving", SRID: 4326, Mode: store.ModeMirror, History: true, Columns: cols}
	if err := st.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	current := map[string]*spatial.Feature{}
	feature := func(id string, x, y float64) *spatial.Feature {
		f := &spatial.Feature{ID: id, Geometry: square(x, y, 1e-4*rnd.Float64()), Properties: map[string]any{"name": id}}
		current[id] = f
		return f
	}
	var first []*spatial.Feature
	for i := range 2000 {
		first = append(first, feature(fmt.Sprint(i), 11+rnd.Float64()/10, 48+rnd.Float64()/10))
	}
	check := func(step string) {
		t.Helper()
		var fs []*spatial.Feature
		for _, f := range current {
			fs = append(fs, f)
		}
		tab, err := st.StoredTable(ctx, "", "moving")
		if err != nil {
			t.Fatal(err)
		}
		if want := boundOf(fs...); tab.Extent == nil || *tab.Extent != want {
			t.Errorf("%s: Extent = %v, want %v exactly", step, tab.Extent, want)
		}
	}
	run, _ := mirrorRun(t, st, table, [][]*spatial.Feature{first})
	endRun(t, st, run)
	check("before the R-tree")
	if err := st.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	check("after the R-tree")
	// The features at the edges move inward: their old versions, closed, stay where
	// they were, and keep the R-tree's root as wide.
	var moved []*spatial.Feature
	b := boundOf(first...)
	for _, f := range first {
		fb := f.Geometry.Bound()
		if fb.Min[0]-b.Min[0] < 0.01 || b.Max[0]-fb.Max[0] < 0.01 || fb.Min[1]-b.Min[1] < 0.01 || b.Max[1]-fb.Max[1] < 0.01 {
			moved = append(moved, feature(f.ID, 11.04+rnd.Float64()/50, 48.04+rnd.Float64()/50))
		}
	}
	run, _ = mirrorRun(t, st, table, [][]*spatial.Feature{moved})
	endRun(t, st, run)
	check(fmt.Sprintf("after %d features moved inward", len(moved)))
	run, _ = mirrorRun(t, st, table)
	var outer string
	for id, f := range current {
		if outer == "" || f.Geometry.Bound().Max[0] > current[outer].Geometry.Bound().Max[0] {
			outer = id
		}
	}
	if _, err := st.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run.ID, Task: "a", Keys: []string{outer}}); err != nil {
		t.Fatal(err)
	}
	endRun(t, st, run)
	delete(current, outer)
	check("after the easternmost was deleted")
}

// TestExtentLooseRTree: an R-tree another tool built may hold boxes wider than their
// rows; the extent is still the rows' own.
func TestExtentLooseRTree(t *testing.T) {
	ctx := t.Context()
	st, file := openMirrorStore(t)
	a, b := &spatial.Feature{ID: "a", Geometry: orb.Point{10, 48}}, &spatial.Feature{ID: "b", Geometry: orb.Point{10.5, 48.5}}
	c := &spatial.Feature{ID: "c", Geometry: orb.Point{11, 49}}
	writeTable(t, st, &store.FeatureTable{Name: "loose", SRID: 4326}, a, b, c)
	// b's box reaches past a on every side.
	execFile(t, file, `UPDATE rtree_loose_geom SET minx = 9, maxx = 12, miny = 47, maxy = 50 WHERE id = 2`)
	tab, err := st.StoredTable(ctx, "", "loose")
	if want := boundOf(a, b, c); err != nil || tab.Extent == nil || *tab.Extent != want {
		t.Errorf("Extent = %v (%v), want %v", tab.Extent, err, want)
	}
}
