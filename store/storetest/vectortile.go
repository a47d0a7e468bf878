package storetest

import (
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// tileFeature is one feature of a decoded vector tile.
type tileFeature struct {
	props map[string]any
	geom  orb.Geometry // in tile units, y down
}

// decodeTile decodes vt, which must be empty or hold one layer named name of extent
// 4096 with Features features, each with an id; it returns them by id.
func decodeTile(t *testing.T, vt store.VectorTile, name string) map[uint64]tileFeature {
	t.Helper()
	out := map[uint64]tileFeature{}
	if len(vt.Data) == 0 {
		if vt.Features != 0 {
			t.Errorf("an empty tile says it holds %d features", vt.Features)
		}
		return out
	}
	layers, err := mvt.Unmarshal(vt.Data)
	if err != nil {
		t.Fatalf("decoding a tile of %d bytes: %v", len(vt.Data), err)
	}
	if len(layers) != 1 || layers[0].Name != name || layers[0].Extent != 4096 {
		for _, l := range layers {
			t.Logf("layer %q, extent %d, %d features", l.Name, l.Extent, len(l.Features))
		}
		t.Fatalf("the tile has %d layers, want one named %q of extent 4096", len(layers), name)
	}
	for _, f := range layers[0].Features {
		id, ok := f.ID.(float64)
		if !ok || id < 0 || id != math.Trunc(id) {
			t.Fatalf("feature id %v (%T), want a TileID", f.ID, f.ID)
		}
		if _, dup := out[uint64(id)]; dup {
			t.Errorf("feature id %d twice in one tile", uint64(id))
		}
		out[uint64(id)] = tileFeature{props: f.Properties, geom: f.Geometry}
	}
	if vt.Features != len(out) {
		t.Errorf("VectorTile.Features = %d, the tile holds %d", vt.Features, len(out))
	}
	return out
}

// tileID is the TileID of f as a store writes it.
func tileID(f *spatial.Feature) uint64 {
	h := spatial.PayloadHash(f)
	return store.TileID(h[:])
}

// hashPrefix is the thinning key of f: the first two bytes of its payload hash.
func hashPrefix(f *spatial.Feature) int {
	h := spatial.PayloadHash(f)
	return int(h[0])<<8 | int(h[1])
}

// vectorTile is tile tl of st, which must render.
func vectorTile(t *testing.T, tb store.Tables, st store.StoredTable, tl maptile.Tile, q store.TileQuery) store.VectorTile {
	t.Helper()
	q.Z, q.X, q.Y = int(tl.Z), int(tl.X), int(tl.Y)
	vt, err := tb.VectorTile(t.Context(), st, q)
	if err != nil {
		t.Fatalf("VectorTile(%s, %+v): %v", st.Name, q, err)
	}
	return vt
}

// testVectorTile: a tile holds exactly the features whose geometry meets it, each with
// its TileID as id, its properties (nulls left out) and gf_feature_id, gf_run_id and,
// keyed, gf_key, drawn where Web Mercator puts it; a tile nothing meets is empty.
func testVectorTile(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	parcels := typedTable("parcels", store.ModeAppend)
	keyed := mirrorTable("keyed", false)
	keyed.Columns = parcels.Columns
	for _, tab := range []*store.FeatureTable{parcels, keyed} {
		if err := s.EnsureFeatureTable(ctx, tab); err != nil {
			t.Fatal(err)
		}
	}
	fs := mapFeatures()
	runs := map[string]int64{
		parcels.Name: ran(t, s, "parcels", parcels, fs).ID,
		keyed.Name:   ran(t, s, "keyed", keyed, fs).ID,
	}
	// The table whose spatial index the first harvest's end built, and one without it.
	if err := s.FinishFeatureTable(ctx, parcels); err != nil {
		t.Fatal(err)
	}
	west, south := maptile.New(tileA.X-1, tileA.Y, tileA.Z), maptile.New(tileA.X, tileA.Y+2, tileA.Z)
	for _, table := range []*store.FeatureTable{parcels, keyed} {
		st := storedTable(t, tb, table.Name)
		for _, tl := range []maptile.Tile{tileA, tileB, west, south} {
			t.Run(fmt.Sprintf("%s/%d/%d/%d", table.Name, tl.Z, tl.X, tl.Y), func(t *testing.T) {
				vt := vectorTile(t, tb, st, tl, store.TileQuery{})
				got := decodeTile(t, vt, table.Name)
				var want []*spatial.Feature
				for _, f := range fs {
					if f.Geometry.Bound().Intersects(tl.Bound()) {
						want = append(want, f)
					}
				}
				if vt.Thinned || len(got) != len(want) {
					t.Errorf("the tile holds %d features (thinned %v), want %d: %s", len(got), vt.Thinned, len(want), featureIDs(want))
				}
				for _, f := range want {
					tf, ok := got[tileID(f)]
					if !ok {
						t.Errorf("%s is missing (id %d)", f.ID, tileID(f))
						continue
					}
					checkTileFeature(t, table, f, tf, runs[table.Name], tl)
				}
			})
		}
	}
}

// featureIDs lists the ids of fs.
func featureIDs(fs []*spatial.Feature) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return strings.Join(out, ", ")
}

// checkTileFeature checks f, written into table by runID, as tile tl holds it (tf).
func checkTileFeature(t *testing.T, table *store.FeatureTable, f *spatial.Feature, tf tileFeature, runID int64, tl maptile.Tile) {
	t.Helper()
	cols, others, err := gotProperties(table, tf.props)
	if err != nil {
		t.Errorf("%s: %v", f.ID, err)
	}
	if want := wantProperties(t, table, f); !reflect.DeepEqual(cols, want) {
		t.Errorf("%s: properties %v, want %v", f.ID, cols, want)
	}
	wantOthers := map[string]any{"gf_feature_id": f.ID, "gf_run_id": float64(runID)}
	if table.Keyed() {
		wantOthers["gf_key"] = f.ID
	}
	if !reflect.DeepEqual(others, wantOthers) {
		t.Errorf("%s: geoflow's properties %v, want %v", f.ID, others, wantOthers)
	}
	if p, ok := f.Geometry.(orb.Point); ok {
		frac := maptile.Fraction(p, tl.Z)
		want := orb.Point{(frac[0] - float64(tl.X)) * 4096, (frac[1] - float64(tl.Y)) * 4096}
		if g, ok := tf.geom.(orb.Point); !ok || math.Abs(g[0]-want[0]) > 1 || math.Abs(g[1]-want[1]) > 1 {
			t.Errorf("%s drawn at %v, want within a tile unit of %v", f.ID, tf.geom, want)
		}
	}
}

// denseLines are n lines crossing the edge tiles A and B share, each at its own
// latitude, the table's extent as much in A as in B.
func denseLines(n int) []*spatial.Feature {
	fs := make([]*spatial.Feature, n)
	for i := range fs {
		fy := (float64(i) + 0.5) / float64(n)
		fs[i] = &spatial.Feature{ID: fmt.Sprintf("d.%03d", i), Geometry: orb.LineString{at(0.98, fy), at(1.02, fy)},
			Properties: map[string]any{"name": fmt.Sprintf("dense line number %03d", i)}}
	}
	return fs
}

// checkSample checks that kept, the ids a thinned tile of fs (all of which meet it)
// holds, are a sample by payload hash: every feature kept has a lower prefix than every
// one dropped, and below the threshold an estimate of at least estimate features gives.
func checkSample(t *testing.T, fs []*spatial.Feature, kept map[uint64]tileFeature, limit int, estimate float64) {
	t.Helper()
	maxKept, minDropped := -1, math.MaxInt
	for _, f := range fs {
		if _, ok := kept[tileID(f)]; ok {
			maxKept = max(maxKept, hashPrefix(f))
		} else {
			minDropped = min(minDropped, hashPrefix(f))
		}
	}
	if maxKept >= minDropped {
		t.Errorf("a feature of hash prefix %d was kept and one of %d dropped: not a sample by payload hash", maxKept, minDropped)
	}
	if below := store.SampleBelow(estimate, limit); maxKept >= below {
		t.Errorf("a feature of hash prefix %d was kept, want all below %d (SampleBelow(%g, %d))", maxKept, below, estimate, limit)
	}
}

// testVectorTileThinned: a tile that would hold more than MaxFeatures features, or more
// than MaxBytes bytes, is thinned to a sample by payload hash, which two neighbouring
// tiles draw alike where features cross their shared edge.
func testVectorTileThinned(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := &store.FeatureTable{Name: "dense", SRID: 4326, Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	fs := denseLines(500)
	ran(t, s, "dense", table, fs)
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	st := storedTable(t, tb, table.Name)
	if vt := vectorTile(t, tb, st, tileA, store.TileQuery{}); vt.Features != len(fs) || vt.Thinned {
		t.Errorf("within the default bounds: %d features, thinned %v; want all %d", vt.Features, vt.Thinned, len(fs))
	}
	// All 500 meet tile A, which covers half the table's extent: an estimate of the
	// table's rows times that share is 250.
	const limit, estimate = 50, 250.0
	q := store.TileQuery{MaxFeatures: limit}
	vtA := vectorTile(t, tb, st, tileA, q)
	keptA := decodeTile(t, vtA, table.Name)
	if !vtA.Thinned || len(keptA) > limit || len(keptA) < limit/5 {
		t.Errorf("MaxFeatures %d: %d features, thinned %v; want between %d and %d, thinned", limit, len(keptA), vtA.Thinned, limit/5, limit)
	}
	checkSample(t, fs, keptA, limit, estimate)
	t.Logf("MaxFeatures %d: tile A holds %d of the %d lines, %d bytes", limit, len(keptA), len(fs), len(vtA.Data))
	keptB := decodeTile(t, vectorTile(t, tb, st, tileB, q), table.Name)
	if a, b := slices.Sorted(maps.Keys(keptA)), slices.Sorted(maps.Keys(keptB)); !slices.Equal(a, b) {
		t.Errorf("tiles A and B keep different lines of those crossing their edge: %d and %d of them, %d in common",
			len(a), len(b), len(intersect(a, b)))
	}

	const maxBytes = 3000
	vt := vectorTile(t, tb, st, tileA, store.TileQuery{MaxBytes: maxBytes})
	kept := decodeTile(t, vt, table.Name)
	if !vt.Thinned || len(vt.Data) > maxBytes || len(kept) == 0 {
		t.Errorf("MaxBytes %d: %d bytes, %d features, thinned %v; want at most %d bytes, some features, thinned",
			maxBytes, len(vt.Data), len(kept), vt.Thinned, maxBytes)
	}
	checkSample(t, fs, kept, limit, estimate)
	t.Logf("MaxBytes %d: tile A holds %d of the %d lines, %d bytes", maxBytes, len(kept), len(fs), len(vt.Data))
}

func intersect(a, b []uint64) []uint64 {
	var out []uint64
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// testVectorTileGDAL: GDAL's MVT driver reads a tile saved as DIR/z/x/y.pbf: its
// features and their attributes. It needs ogrinfo: without it the test skips, unless
// GEOFLOW_REQUIRE_GDAL=1 makes that a failure.
func testVectorTileGDAL(t *testing.T, s store.Store) {
	ogrinfo, err := exec.LookPath("ogrinfo")
	if err != nil {
		if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but ogrinfo is not on PATH: %v", err)
		}
		t.Skipf("ogrinfo not on PATH (GDAL is only for comparisons): %v", err)
	}
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	ran(t, s, "parcels", table, mapFeatures())
	vt := vectorTile(t, tb, storedTable(t, tb, table.Name), tileA, store.TileQuery{})
	path := filepath.Join(t.TempDir(), fmt.Sprint(tileA.Z), fmt.Sprint(tileA.X), fmt.Sprintf("%d.pbf", tileA.Y))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, vt.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, ogrinfo, "-al", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo -al %s: %v\n%s", path, err, out)
	}
	for _, want := range []string{"Layer name: parcels", "Feature Count: 3", "name (String) = one", "gf_feature_id (String) = v.2"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ogrinfo -al of tile A does not say %q:\n%s", want, out)
		}
	}
}
