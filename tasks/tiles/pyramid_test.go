package tiles_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/tasks/tiles"
)

// TestTilesIntoGeoPackagePyramid mirrors two zoom levels into a GeoPackage tile pyramid,
// revalidates them with 304s on a rerun, and has GDAL (the reference reader) open the
// pyramid as a raster with its zoom levels.
func TestTilesIntoGeoPackagePyramid(t *testing.T) {
	fx := tileserver.New(tileserver.Options{})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "tiles.gpkg")
	st, err := gpkg.Open(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fx: fx, srv: srv, dir: dir, logs: &bytes.Buffer{}}
	f := h.flow(strings.Replace(basemap(munich, "[12, 13]", ""), "target: {dir: $DIR/tiles, table: public.basemap_tiles}",
		"target: {storage: geopackage, table: basemap}", 1))
	run := func() *engine.Result {
		res, err := engine.Run(context.Background(), f, engine.RunOptions{Store: testflow.Stores(st), Logger: h.logger(), HTTP: h.handler()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := int64(len(cover(munich, 12, 13)))
	if res := run(); res.Summary.Inserted != want || res.Summary.UnitsDead != 0 {
		t.Fatalf("first run: %+v, want %d tiles inserted\n%s", res.Summary, want, h.logs)
	}
	if res := run(); res.Summary.Inserted != 0 || res.Summary.Skipped != want || fx.Stats().NotModified != want {
		t.Fatalf("rerun: %+v, %d 304s; want %d skipped by 304", res.Summary, fx.Stats().NotModified, want)
	}
	st.Close()
	if n := testdb.Count(t, file, "SELECT count(*) FROM basemap"); n != want {
		t.Fatalf("%d tiles in the pyramid, want %d", n, want)
	}
	if n := testdb.Count(t, file, "SELECT count(*) FROM gpkg_tile_matrix WHERE table_name = 'basemap'"); n != 2 {
		t.Fatalf("%d zoom levels registered, want 2", n)
	}
	out, err := exec.Command("gdalinfo", file).CombinedOutput()
	if err != nil {
		t.Fatalf("gdalinfo: %v\n%s", err, out)
	}
	for _, s := range []string{"Driver: GPKG/GeoPackage", "ZOOM_LEVEL=13", `ID["EPSG",3857]`} {
		if !strings.Contains(string(out), s) {
			t.Errorf("gdalinfo does not say %q:\n%s", s, out)
		}
	}
	// GDAL's own GeoPackage validator accepts the file, with its extra checks, warnings
	// counted as errors.
	if out, err := exec.Command("python3", "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py",
		"--extra", "--warning-as-error", file).CombinedOutput(); err != nil {
		t.Fatalf("validate_gpkg.py: %v\n%s", err, out)
	}
	// GDAL reads the tiles back: the raster's pixels are not all empty.
	out, err = exec.Command("gdalinfo", "-stats", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "STATISTICS_MAXIMUM") || strings.Contains(string(out), "STATISTICS_MAXIMUM=0\n") {
		t.Fatalf("gdalinfo -stats: %v\n%s", err, out)
	}
}

// TestPyramidBlockHoldsBoundedData: a block of tiles kept in the GeoPackage holds their
// content in memory until it commits; past its bound, the block's remaining tiles are
// units of their own. Every tile is still fetched once and stored.
func TestPyramidBlockHoldsBoundedData(t *testing.T) {
	tiles.SetMaxBlockData(t.Cleanup, 3000) // about 20 of the fixture's tiles
	fx := tileserver.New(tileserver.Options{})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "tiles.gpkg")
	st, err := gpkg.Open(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fx: fx, srv: srv, dir: dir, logs: &bytes.Buffer{}}
	f := h.flow(strings.Replace(basemap(munich, "[16, 16]", "    rate_limit: {concurrency: 1}\n"),
		"target: {dir: $DIR/tiles, table: public.basemap_tiles}", "target: {storage: geopackage, table: basemap}", 1))
	res, err := engine.Run(context.Background(), f, engine.RunOptions{Store: testflow.Stores(st), Logger: h.logger(), HTTP: h.handler()})
	if err != nil {
		t.Fatal(err)
	}
	want := cover(munich, 16, 16)
	if res.Status != store.Done || res.Summary.Inserted != int64(len(want)) {
		t.Fatalf("run %s, %d inserted; want %d\n%s", res.Status, res.Summary.Inserted, len(want), tail(h.logs.String()))
	}
	for k, n := range fx.Stats().Served {
		if n != 1 || !want[k] {
			t.Errorf("tile %s fetched %d times", k, n)
		}
	}
	if n := testdb.Count(t, file, "SELECT count(*) FROM basemap"); n != int64(len(want)) {
		t.Errorf("%d tiles in the pyramid, want %d", n, len(want))
	}
	blocks := testdb.Count(t, file, "SELECT count(*) FROM geoflow_units WHERE key LIKE 'b/%'")
	singles := testdb.Count(t, file, "SELECT count(*) FROM geoflow_units WHERE key NOT LIKE 'b/%' AND state = 'done'")
	if blocks == 0 || singles == 0 || !strings.Contains(h.logs.String(), "holds as much tile content as it may") {
		t.Errorf("%d blocks, %d single tiles done; want blocks that handed their remaining tiles on", blocks, singles)
	}
}
