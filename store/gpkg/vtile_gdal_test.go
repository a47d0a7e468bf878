package gpkg_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/store"
)

// ogrinfo finds GDAL's ogrinfo, the reference reader the tiles are checked against: the
// test skips without it, unless GEOFLOW_REQUIRE_GDAL=1 makes that a failure (CI that
// installed GDAL must not skip silently).
func ogrinfo(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("ogrinfo")
	if err != nil {
		if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but ogrinfo is not on PATH: %v", err)
		}
		t.Skipf("ogrinfo not on PATH (GDAL is only for comparisons): %v", err)
	}
	return path
}

// TestGDALReadsVectorTile: GDAL's MVT driver reads a tile, saved as z/x/y.pbf (the path
// tells the driver the tile's place), with its features and their attributes.
func TestGDALReadsVectorTile(t *testing.T) {
	tool := ogrinfo(t)
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	fs := gridFeatures()
	writeTable(t, st, &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: typedColumns}, fs...)
	table, err := st.StoredTable(ctx, "", "parcels")
	if err != nil {
		t.Fatal(err)
	}
	tile := maptile.At(orb.Point{11.53, 48.115}, 14)
	vt, err := st.VectorTile(ctx, table, store.TileQuery{Z: 14, X: int(tile.X), Y: int(tile.Y)})
	if err != nil || vt.Features == 0 {
		t.Fatalf("VectorTile: %d features, %v", vt.Features, err)
	}
	file := filepath.Join(t.TempDir(), "14", strconv.Itoa(int(tile.X)), strconv.Itoa(int(tile.Y))+".pbf")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, vt.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, tool, "-al", file).CombinedOutput()
	t.Logf("$ ogrinfo -al %s\n%s", file, out)
	if err != nil {
		t.Fatalf("ogrinfo: %v", err)
	}
	text := string(out)
	if m := regexp.MustCompile(`Feature Count: (\d+)`).FindStringSubmatch(text); m == nil || m[1] != strconv.Itoa(vt.Features) {
		t.Errorf("ogrinfo counts %v features, the tile holds %d", m, vt.Features)
	}
	for _, want := range []string{"Layer name: parcels", "name (String) = g.10.5", "gf_feature_id (String) = g.10.5", "ok (Integer(Boolean)) = 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("ogrinfo does not say %q", want)
		}
	}
}
