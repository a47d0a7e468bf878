package gpkg_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// tileFeature is a feature of a decoded tile.
type tileFeature struct {
	props map[string]any
	geom  orb.Geometry
}

// decodeTile decodes a tile's one layer, named name, into its features by id.
func decodeTile(t *testing.T, vt store.VectorTile, name string) map[uint64]tileFeature {
	t.Helper()
	out := map[uint64]tileFeature{}
	if len(vt.Data) == 0 {
		return out
	}
	layers, err := mvt.Unmarshal(vt.Data)
	if err != nil {
		t.Fatalf("mvt.Unmarshal: %v", err)
	}
	if len(layers) != 1 || layers[0].Name != name || layers[0].Extent != 4096 || layers[0].Version != 2 {
		t.Fatalf("tile has %d layers, the first %q (extent %d, version %d); want one, %q, extent 4096, version 2",
			len(layers), layers[0].Name, layers[0].Extent, layers[0].Version, name)
	}
	for _, f := range layers[0].Features {
		id, ok := f.ID.(float64)
		if !ok {
			t.Fatalf("a feature without a numeric id: %v", f.ID)
		}
		if _, dup := out[uint64(id)]; dup {
			t.Fatalf("id %d twice in the tile", uint64(id))
		}
		out[uint64(id)] = tileFeature{props: f.Properties, geom: f.Geometry}
	}
	if len(out) != vt.Features {
		t.Errorf("the tile says it holds %d features, it holds %d", vt.Features, len(out))
	}
	return out
}

// tileID is the id a feature has in tiles.
func tileID(f *spatial.Feature) uint64 {
	h := spatial.PayloadHash(f)
	return store.TileID(h[:])
}

// bufferedTile is a tile's lon/lat bound and its bound with the tiles' 64-unit buffer.
func bufferedTile(z, x, y int) (tile, buffered orb.Bound) {
	tile = maptile.New(uint32(x), uint32(y), maptile.Zoom(z)).Bound()
	m := mercBound(tile)
	d := (m.Max[0] - m.Min[0]) * 64 / 4096
	buffered = orb.Bound{Min: project.Mercator.ToWGS84(orb.Point{m.Min[0] - d, m.Min[1] - d}),
		Max: project.Mercator.ToWGS84(orb.Point{m.Max[0] + d, m.Max[1] + d})}
	return tile, buffered
}

// tileUnits is where lon/lat point p lies in tile z/x/y, in tile units.
func tileUnits(p orb.Point, z, x, y int) orb.Point {
	f := maptile.Fraction(p, maptile.Zoom(z))
	return orb.Point{(f[0] - float64(x)) * 4096, (f[1] - float64(y)) * 4096}
}

// gridFeatures are squares of 0.0005 degrees, every 0.003 degrees over 0.06 by 0.03
// degrees from lon 11.5 lat 48.1, alternating with points, with typed properties, some
// null: they fall into, across and beside several z14 tiles.
func gridFeatures() []*spatial.Feature {
	var fs []*spatial.Feature
	for i := range 20 {
		for j := range 10 {
			x, y := 11.5+0.003*float64(i), 48.1+0.003*float64(j)
			id := fmt.Sprintf("g.%d.%d", i, j)
			var g orb.Geometry = square(x, y, 0.0005)
			if (i+j)%2 == 1 {
				g = orb.Point{x, y}
			}
			props := map[string]any{"name": id, "n": float64(i*10 + j), "area": float64(i) + 0.5, "ok": j%2 == 0,
				"day": "2024-05-01", "at": "2024-05-01T10:00:00Z"}
			if i == 3 {
				props["name"], props["n"] = nil, nil
			}
			fs = append(fs, &spatial.Feature{ID: id, Geometry: g, Properties: props})
		}
	}
	return fs
}

// typedColumns are gridFeatures' columns.
var typedColumns = []store.Column{{Name: "name", Property: "name", Type: store.TypeText}, {Name: "n", Property: "n", Type: store.TypeBigint},
	{Name: "area", Property: "area", Type: store.TypeDouble}, {Name: "ok", Property: "ok", Type: store.TypeBoolean},
	{Name: "day", Property: "day", Type: store.TypeDate}, {Name: "at", Property: "at", Type: store.TypeTimestamptz}}

// wantProperties are the properties of f in a tile: its columns typed as MVT decodes
// them (numbers as float64), nulls left out, and geoflow's.
func wantProperties(f *spatial.Feature, run int64, key string) map[string]any {
	props := map[string]any{"gf_feature_id": f.ID, "gf_run_id": float64(run)}
	if key != "" {
		props["gf_key"] = key
	}
	for k, v := range f.Properties {
		switch {
		case v == nil:
		case k == "at":
			props[k] = "2024-05-01T10:00:00.000Z"
		default:
			props[k] = v
		}
	}
	return props
}

// TestVectorTile draws tiles of tables in lon/lat and Web Mercator: each holds exactly
// the features whose geometry meets it (not those in its buffer alone), with their
// ids, properties and places; an empty tile is empty, and a table in a CRS the store
// cannot transform fails wrapping store.ErrNoTransform.
func TestVectorTile(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	at := maptile.At(orb.Point{11.53, 48.115}, 14)
	// Next to the grid, features in the buffer around tile at alone: a point west of it,
	// a square north of it, 20 tile units from its edges.
	tb := at.Bound()
	unit := (tb.Max[0] - tb.Min[0]) / 4096
	fs := append(gridFeatures(),
		&spatial.Feature{ID: "b.west", Geometry: orb.Point{tb.Min[0] - 20*unit, (tb.Min[1] + tb.Max[1]) / 2}},
		&spatial.Feature{ID: "b.north", Geometry: square(tb.Min[0]+100*unit, tb.Max[1]+20*unit, 40*unit)})
	run := writeTable(t, st, &store.FeatureTable{Name: "lonlat", SRID: 4326, Columns: typedColumns}, fs...)
	mercs := make([]*spatial.Feature, len(fs))
	for i, f := range fs {
		mercs[i] = &spatial.Feature{ID: f.ID, Geometry: project.Geometry(orb.Clone(f.Geometry), project.WGS84.ToMercator), Properties: f.Properties}
	}
	mrun := writeTable(t, st, &store.FeatureTable{Name: "mercator", SRID: 3857, Mode: store.ModeMirror, Columns: typedColumns}, mercs...)
	writeTable(t, st, &store.FeatureTable{Name: "bng", SRID: 27700}, &spatial.Feature{ID: "b", Geometry: orb.Point{530000, 180000}})

	tests := []struct {
		name    string
		table   string
		z, x, y int
		fs      []*spatial.Feature // written; the tile's are those that meet it
		run     int64
		keyed   bool
		err     error
	}{
		{name: "lon/lat", table: "lonlat", z: 14, x: int(at.X), y: int(at.Y), fs: fs, run: run.ID},
		{name: "lon/lat, the tile east", table: "lonlat", z: 14, x: int(at.X) + 1, y: int(at.Y), fs: fs, run: run.ID},
		{name: "lon/lat, all in one tile", table: "lonlat", z: 10, x: int(at.X) >> 4, y: int(at.Y) >> 4, fs: fs, run: run.ID},
		{name: "web mercator, keyed", table: "mercator", z: 14, x: int(at.X), y: int(at.Y), fs: fs, run: mrun.ID, keyed: true},
		{name: "nothing there", table: "lonlat", z: 14, x: int(at.X) + 40, y: int(at.Y)},
		{name: "EPSG:27700, which the store cannot transform", table: "bng", z: 14, x: int(at.X), y: int(at.Y), err: store.ErrNoTransform},
		{name: "no such tile", table: "lonlat", z: 3, x: 8, y: 0, err: store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := st.StoredTable(ctx, "", tt.table)
			if err != nil {
				t.Fatal(err)
			}
			vt, err := st.VectorTile(ctx, table, store.TileQuery{Z: tt.z, X: tt.x, Y: tt.y})
			if tt.err != nil || err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("VectorTile: %v, want %v", err, tt.err)
				}
				return
			}
			if vt.Thinned {
				t.Error("thinned, under the default bounds")
			}
			got := decodeTile(t, vt, tt.table)
			tile, buffered := bufferedTile(tt.z, tt.x, tt.y)
			in, inBuffer := 0, 0
			for _, f := range tt.fs {
				id := tileID(f)
				if tt.keyed {
					id = tileID(mercs[slices.Index(fs, f)])
				}
				gf, ok := got[id]
				// Squares and points: their boxes meet the tile when they do.
				switch b := f.Geometry.Bound(); {
				case tile.Intersects(b):
					in++
					if !ok {
						t.Errorf("%s (%v) meets the tile and is not in it", f.ID, b)
						continue
					}
				case ok:
					t.Errorf("%s (%v) does not meet the tile and is in it", f.ID, b)
					continue
				default:
					if buffered.Intersects(b) {
						inBuffer++
					}
					continue
				}
				key := ""
				if tt.keyed {
					key = f.ID
				}
				if want := wantProperties(f, tt.run, key); !reflect.DeepEqual(gf.props, want) {
					t.Errorf("%s has properties\n%v\nwant\n%v", f.ID, gf.props, want)
				}
				if p, isPoint := f.Geometry.(orb.Point); isPoint && tt.z == 14 {
					want, got := tileUnits(p, tt.z, tt.x, tt.y), gf.geom.(orb.Point)
					if math.Abs(want[0]-got[0]) > 1 || math.Abs(want[1]-got[1]) > 1 {
						t.Errorf("%s is at %v in the tile, want %v", f.ID, got, want)
					}
				}
			}
			if len(tt.fs) > 0 && (in == 0 || in == len(tt.fs) && tt.z == 14 || inBuffer == 0 && tt.x == int(at.X)) {
				t.Fatalf("%d of %d features meet the tile, %d its buffer alone: the test tests little", in, len(tt.fs), inBuffer)
			}
			if len(tt.fs) == 0 && (len(vt.Data) != 0 || vt.Features != 0) {
				t.Errorf("an empty tile has %d bytes, %d features", len(vt.Data), vt.Features)
			}
		})
	}
}

// TestVectorTileHistory: a table with history draws its current versions, or those
// current after a run.
func TestVectorTileHistory(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	table := &store.FeatureTable{Name: "history", SRID: 4326, Mode: store.ModeMirror, History: true, Columns: typedColumns[:1]}
	feature := func(id, name string, x float64) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: orb.Point{x, 48.1}, Properties: map[string]any{"name": name}}
	}
	a1, b1, c1 := feature("a", "a, first", 11.501), feature("b", "b", 11.502), feature("c", "c", 11.503)
	a2 := feature("a", "a, second", 11.501)
	run1 := writeTable(t, st, table, a1, b1, c1)
	run2, _ := mirrorRun(t, st, table, [][]*spatial.Feature{{a2, b1}})
	if _, err := st.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run2.ID, Task: "a", Keys: []string{"c"}}); err != nil {
		t.Fatal(err)
	}
	endRun(t, st, run2)
	tab, err := st.StoredTable(ctx, "", "history")
	if err != nil {
		t.Fatal(err)
	}
	tile := maptile.At(orb.Point{11.502, 48.1}, 14)
	tests := []struct {
		name  string
		asOf  int64
		names []string
	}{
		{name: "current", names: []string{"a, second", "b"}},
		{name: "as of run 1", asOf: run1.ID, names: []string{"a, first", "b", "c"}},
		{name: "as of run 2", asOf: run2.ID, names: []string{"a, second", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vt, err := st.VectorTile(ctx, tab, store.TileQuery{Z: 14, X: int(tile.X), Y: int(tile.Y), AsOfRun: tt.asOf})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range decodeTile(t, vt, "history") {
				names = append(names, f.props["name"].(string))
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.names) {
				t.Errorf("the tile draws %q, want %q", names, tt.names)
			}
		})
	}
}

// TestVectorTileThinned: a tile that would hold more than its bounds keeps a sample,
// the features whose hash prefix is below a threshold, so that two tiles sampled alike
// keep the same features across their edge; MaxBytes bounds the tile likewise.
func TestVectorTileThinned(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	west := maptile.At(orb.Point{11.53, 48.115}, 14)
	east := maptile.New(west.X+1, west.Y, 14)
	both := west.Bound().Union(east.Bound())
	rnd := rand.New(rand.NewPCG(1, 2))
	var fs []*spatial.Feature
	for i := range 1000 {
		p := orb.Point{both.Min[0] + rnd.Float64()*(both.Max[0]-both.Min[0]), both.Min[1] + rnd.Float64()*(both.Max[1]-both.Min[1])}
		fs = append(fs, &spatial.Feature{ID: fmt.Sprint("p.", i), Geometry: p, Properties: map[string]any{"name": fmt.Sprint(i)}})
	}
	edge := east.Bound().Min[0]
	var across []*spatial.Feature // squares across the edge of the two tiles
	for i := range 200 {
		y := both.Min[1] + (both.Max[1]-both.Min[1])*(float64(i)+0.5)/200
		across = append(across, &spatial.Feature{ID: fmt.Sprint("x.", i), Geometry: square(edge-0.0001, y, 0.0002)})
	}
	writeTable(t, st, &store.FeatureTable{Name: "dense", SRID: 4326, Columns: typedColumns[:1]}, append(fs, across...)...)
	tab, err := st.StoredTable(ctx, "", "dense")
	if err != nil {
		t.Fatal(err)
	}
	draw := func(tile maptile.Tile, q store.TileQuery) (store.VectorTile, map[uint64]tileFeature) {
		t.Helper()
		q.Z, q.X, q.Y = int(tile.Z), int(tile.X), int(tile.Y)
		vt, err := st.VectorTile(ctx, tab, q)
		if err != nil {
			t.Fatal(err)
		}
		return vt, decodeTile(t, vt, "dense")
	}
	prefix := map[uint64]int{}
	for _, f := range append(fs, across...) {
		h := spatial.PayloadHash(f)
		prefix[tileID(f)] = int(h[0])<<8 | int(h[1])
	}
	tests := []struct {
		name  string
		query store.TileQuery
		check func(vt store.VectorTile) string
		// alike: the two tiles, equally dense, are sampled alike. A tile halves its
		// threshold for its bytes as they come, which differ from tile to tile.
		alike bool
	}{
		{name: "MaxFeatures", query: store.TileQuery{MaxFeatures: 50}, alike: true, check: func(vt store.VectorTile) string {
			if vt.Features > 50 {
				return fmt.Sprintf("%d features, over 50", vt.Features)
			}
			return ""
		}},
		{name: "MaxBytes", query: store.TileQuery{MaxBytes: 2000}, check: func(vt store.VectorTile) string {
			if len(vt.Data) > 2000 {
				return fmt.Sprintf("%d bytes, over 2000", len(vt.Data))
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept := map[maptile.Tile]map[uint64]tileFeature{}
			keptMax, leftMin := -1, 65536 // over both tiles
			for _, tile := range []maptile.Tile{west, east} {
				_, all := draw(tile, store.TileQuery{})
				vt, got := draw(tile, tt.query)
				if msg := tt.check(vt); msg != "" || !vt.Thinned || vt.Features == 0 {
					t.Fatalf("tile %v: %s; thinned %v, %d features", tile, msg, vt.Thinned, vt.Features)
				}
				// The sample is the tile's features below a threshold: every one kept is
				// below every one left out.
				tileMax, tileMin := -1, 65536
				for id := range all {
					if _, ok := got[id]; ok {
						tileMax = max(tileMax, prefix[id])
					} else {
						tileMin = min(tileMin, prefix[id])
					}
				}
				if tileMax >= tileMin {
					t.Errorf("tile %v keeps a feature of prefix %d and leaves one of %d out", tile, tileMax, tileMin)
				}
				keptMax, leftMin = max(keptMax, tileMax), min(leftMin, tileMin)
				kept[tile] = got
				t.Logf("tile %v: %d of %d features, %d bytes", tile, vt.Features, len(all), len(vt.Data))
			}
			if !tt.alike {
				return
			}
			// Sampled alike, every feature kept in either tile is below every one left
			// out of either, and one across their edge is in both or in neither.
			if keptMax >= leftMin {
				t.Errorf("a feature of prefix %d is kept and one of %d left out", keptMax, leftMin)
			}
			for _, f := range across {
				_, inWest := kept[west][tileID(f)]
				_, inEast := kept[east][tileID(f)]
				if inWest != inEast {
					t.Errorf("%s, across the edge, is in the west tile %v, in the east %v", f.ID, inWest, inEast)
				}
			}
		})
	}
	t.Run("no more than the bounds", func(t *testing.T) {
		vt, _ := draw(west, store.TileQuery{MaxFeatures: 100000})
		if vt.Thinned {
			t.Errorf("a tile of %d features within bounds of 100000 is thinned", vt.Features)
		}
	})
}
