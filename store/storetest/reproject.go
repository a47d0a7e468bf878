package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// utmParcels are five parcels around 11.55E 48.15N, in lon/lat as a source delivers them.
func utmParcels() []*spatial.Feature {
	var fs []*spatial.Feature
	for i := range 5 {
		x, y := 11.5+0.02*float64(i), 48.1+0.02*float64(i)
		ring := orb.Ring{{x, y}, {x + 0.01, y}, {x + 0.01, y + 0.01}, {x, y + 0.01}, {x, y}}
		fs = append(fs, &spatial.Feature{ID: fmt.Sprintf("p.%d", i), Geometry: orb.Polygon{ring}, Properties: map[string]any{"name": fmt.Sprint(i)}})
	}
	return fs
}

// testReproject: a table whose features arrive in lon/lat and are stored in EPSG:25832
// (target.srs). Its payload hashes are those of the geometry as it arrived, so a rerun of
// unchanged features skips them all; it is read back, drawn and listed in lon/lat within
// 1e-9 degrees of what arrived; boxes, counts and a --bbox mirror rerun select by the
// lon/lat area; a CRS the store cannot transform to fails EnsureFeatureTable.
func testReproject(t *testing.T, s store.Store) {
	ctx := t.Context()
	tb := tablesOf(t, s)
	table := &store.FeatureTable{Name: "parcels_utm", SRID: 25832, SourceSRID: 4326, Mode: store.ModeMirror,
		Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	src := utmParcels()
	run1, c1 := mirrorRun(t, s, table, src)
	finishRun(t, s, run1, store.Done, "")
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run2, c2 := mirrorRun(t, s, table, utmParcels())
	if c1[0] != (store.Counts{Inserted: 5}) || c2[0] != (store.Counts{Skipped: 5}) {
		t.Errorf("first run %+v, rerun of the same features %+v; want 5 inserted, then 5 skipped", c1[0], c2[0])
	}
	finishRun(t, s, run2, store.Done, "")

	st := storedTable(t, tb, table.Name)
	if st.SRID != 25832 {
		t.Errorf("StoredTable SRID %d, want 25832", st.SRID)
	}
	// The extent is the box around the stored box's outline: a little wider than the
	// features' own box.
	all := boundOf(src...)
	if st.Extent == nil || !st.Extent.Contains(all.Min) || !st.Extent.Contains(all.Max) || !nearBound(st.Extent, all, 5e-3) {
		t.Errorf("Extent %s, want about %s in lon/lat (within 5e-3 degrees), containing it", fmtBound(st.Extent), fmtBound(&all))
	}
	checkReprojectedRead(t, tb, st, src)
	if n, err := s.CountFeatures(ctx, table, orb.Bound{Min: orb.Point{11.505, 48.105}, Max: orb.Point{11.525, 48.125}}); err != nil || n != 2 {
		t.Errorf("CountFeatures in a box over p.0 and p.1 = %d (%v), want 2", n, err)
	}
	tile := maptile.At(orb.Point{11.505, 48.105}, 14)
	vt, err := tb.VectorTile(ctx, st, store.TileQuery{Z: int(tile.Z), X: int(tile.X), Y: int(tile.Y)})
	if err != nil {
		t.Fatalf("VectorTile: %v", err)
	}
	if got := decodeTile(t, vt, table.Name); len(got) != 1 {
		t.Errorf("tile %v holds %d features, want p.0", tile, len(got))
	}
	checkReprojectedMirror(t, s, table, src)

	bad := &store.FeatureTable{Name: "parcels_nowhere", SRID: 999999, SourceSRID: 4326}
	if err := s.EnsureFeatureTable(ctx, bad); err == nil || !strings.Contains(err.Error(), "EPSG:999999") {
		t.Errorf("EnsureFeatureTable in EPSG:999999 = %v, want an error naming it", err)
	}
	moved := &store.FeatureTable{Name: "parcels_utm", SRID: 3035, SourceSRID: 4326, Mode: store.ModeMirror, Columns: table.Columns}
	var inc *store.IncompatibleTableError
	if err := s.EnsureFeatureTable(ctx, moved); !errors.As(err, &inc) || !strings.Contains(err.Error(), "EPSG:25832") {
		t.Errorf("EnsureFeatureTable of the EPSG:25832 table for EPSG:3035 = %v, want an IncompatibleTableError naming its CRS", err)
	}
}

// checkReprojectedRead reads the whole table and a box of it: every geometry back in
// lon/lat within 1e-9 degrees of src, and each row's TileID that of src's payload hash.
func checkReprojectedRead(t *testing.T, tb store.Tables, st store.StoredTable, src []*spatial.Feature) {
	t.Helper()
	got := readAll(t, tb, st, store.FeatureQuery{})
	if len(got) != len(src) {
		t.Fatalf("read %q, want %d features", ids(got), len(src))
	}
	worst := 0.0
	for i, f := range got {
		if !sameShape(f.Geometry, src[i].Geometry, 1e-9) {
			t.Errorf("%s: %v, want %v in lon/lat", f.ID, f.Geometry, src[i].Geometry)
		}
		for j, p := range f.Geometry.(orb.Polygon)[0] {
			q := src[i].Geometry.(orb.Polygon)[0][j]
			worst = math.Max(worst, math.Max(math.Abs(p[0]-q[0]), math.Abs(p[1]-q[1])))
		}
		if h := spatial.PayloadHash(src[i]); f.TileID != store.TileID(h[:]) {
			t.Errorf("%s: TileID %d, not that of the payload as it arrived: its hash is of the stored geometry", f.ID, f.TileID)
		}
	}
	t.Logf("read back in lon/lat: max difference %.3g degrees", worst)
	box := orb.Bound{Min: orb.Point{11.5395, 48.1395}, Max: orb.Point{11.5405, 48.1405}} // over p.2's corner only
	if got := readAll(t, tb, st, store.FeatureQuery{BBox: &box}); !slices.Equal(ids(got), []string{"p.2"}) {
		t.Errorf("ReadFeatures in %v = %q, want p.2", box, ids(got))
	}
}

// checkReprojectedMirror reruns the mirror over p.0 and p.1's area without p.0 (a --bbox
// run): p.0 is deleted, and the change log gives it in lon/lat.
func checkReprojectedMirror(t *testing.T, s store.Store, table *store.FeatureTable, src []*spatial.Feature) {
	t.Helper()
	run, _ := mirrorRun(t, s, table, src[1:2])
	area := orb.Bound{Min: orb.Point{11.49, 48.09}, Max: orb.Point{11.535, 48.135}}
	n, keys, _ := deleteUnseen(t, s, table, run.ID, area, true)
	if n != 1 || !slices.Equal(keys, []string{"p.0"}) {
		t.Errorf("a --bbox rerun over %v without p.0: %d deleted of %q, want p.0", area, n, keys)
	}
	_, chs := changes(t, s, store.ChangeFilter{RunID: run.ID, Features: true})
	if len(chs) != 1 || chs[0].Key != "p.0" || chs[0].SRID != 4326 || !sameShape(chs[0].Geometry, src[0].Geometry, 1e-9) {
		t.Errorf("changes %+v, want p.0 deleted, its geometry in lon/lat", chs)
	}
	finishRun(t, s, run, store.Done, "")
}
