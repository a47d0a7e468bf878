package cli_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testflow"
)

// exportFlow harvests the sample WFS into parcels (a mirror with history) and exports
// the table as a FlatGeobuf and the run's changes as a GeoJSON sequence.
func exportFlow(url, dir string) string {
	return fmt.Sprintf(`name: exports
defaults:
  retry: {max_attempts: 3, base_delay: 1ms, max_delay: 10ms}
  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: %[1]s/wfs
    typename: gf:parcels
    target: {table: parcels, mode: mirror, history: true}
  file:
    type: export
    table: parcels
    path: %[2]s/parcels.fgb
    columns: [zone, parcel_id]
    depends_on: [parcels]
  changed:
    type: export
    changes: true
    of: parcels
    path: %[2]s/changed.geojsons
    depends_on: [parcels]
`, url, dir)
}

// TestExport: a flow harvests into a table and exports it; GDAL reads the file with
// every feature; a second run with nothing changed upstream writes nothing (the same
// inode and mtime) and counts the export skipped; geoflow export writes the table and
// a run's changes; its errors name what there is.
func TestExport(t *testing.T) { eachStore(t, testExport) }

func testExport(t *testing.T, db string) {
	changes := wfsserver.Changes{Edited: 5}
	fx := wfsserver.New(wfsserver.Options{Features: 300, CountDefault: 100, ImplementsSorting: true, Changes: changes})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := geoflow(t, env, args...)
		if code != want {
			t.Fatalf("geoflow %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, testflow.Tail(errs))
		}
		return out + errs
	}
	flow := writeFlow(t, exportFlow(srv.URL, dir))
	run(0, "run", flow, "--progress", "off")
	fgb := filepath.Join(dir, "parcels.fgb")
	if n := ogrCount(t, fgb); n != fx.Count() {
		t.Errorf("GDAL reads %d features in %s, want the %d harvested", n, fgb, fx.Count())
	}
	if n := ogrCount(t, filepath.Join(dir, "changed.geojsons")); n != fx.Count() {
		t.Errorf("the first run's changes hold %d features, want the %d inserted", n, fx.Count())
	}
	before := statOf(t, fgb)
	time.Sleep(20 * time.Millisecond) // a rewrite would have another mtime
	out := run(0, "run", flow, "--progress", "off", "--log-level", "info")
	if after := statOf(t, fgb); after != before {
		t.Errorf("a second run with nothing changed rewrote the export: %+v, then %+v\n%s", before, after, out)
	}
	if !strings.Contains(out, "export: unchanged") {
		t.Errorf("the second run does not say the export is unchanged:\n%s", out)
	}
	// A rerun of an area after the server changed exports the whole table again.
	if err := fx.SetRevision(1, changes); err != nil {
		t.Fatal(err)
	}
	out = run(0, "run", flow, "--progress", "off", "--log-level", "info", "--bbox", "11.4,48.0,11.6,48.2")
	if after := statOf(t, fgb); after.ino == before.ino || !strings.Contains(out, "export: written") {
		t.Errorf("a --bbox rerun after changes upstream did not export again:\n%s", out)
	}
	if n := ogrCount(t, fgb); n != fx.Count() {
		t.Errorf("after the --bbox rerun GDAL reads %d features, want %d", n, fx.Count())
	}

	gpkg := filepath.Join(dir, "cli.gpkg")
	out = run(0, "export", "parcels", gpkg, "--bbox", "-180,-90,180,90", "--columns", "parcel_id")
	if !regexp.MustCompile(fmt.Sprintf(`^%d features of \S+parcels written to %s \(gpkg, [\d.]+ [kM]?B\) in \S+\n$`, fx.Count(), regexp.QuoteMeta(gpkg))).MatchString(out) {
		t.Errorf("geoflow export says %q", out)
	}
	if n := ogrCount(t, gpkg); n != fx.Count() {
		t.Errorf("GDAL reads %d features in %s, want %d", n, gpkg, fx.Count())
	}
	out = run(0, "export", "parcels", filepath.Join(dir, "changes.fgb"), "--changes", "1")
	if !strings.HasPrefix(out, fmt.Sprintf("%d features", fx.Count())) {
		t.Errorf("geoflow export --changes 1 says %q", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "parcel", filepath.Join(dir, "x.fgb")}, `no table "parcel" that geoflow wrote (did you mean "parcels"?); the stored tables: parcels`},
		{[]string{"export", "parcels", filepath.Join(dir, "x.fgb"), "--columns", "zonee"}, `(did you mean "zone"?)`},
		{[]string{"export", "parcels", filepath.Join(dir, "x.kml")}, `no format for the extension ".kml"`},
		{[]string{"export", "parcels", filepath.Join(dir, "x.fgb"), "-f", "shp"}, `unknown format "shp"`},
		{[]string{"export", "parcels", filepath.Join(dir, "x.fgb"), "--bbox", "48,11,49"}, `--bbox`},
	} {
		if out := run(1, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("geoflow %s says\n%s\nwant %q", strings.Join(tc.args, " "), out, tc.want)
		}
	}
}

// fileStat is what a rewrite changes.
type fileStat struct {
	ino   uint64
	mtime time.Time
	size  int64
}

func statOf(t *testing.T, path string) fileStat {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileStat{ino: fi.Sys().(*syscall.Stat_t).Ino, mtime: fi.ModTime(), size: fi.Size()}
}

// ogrCount is the feature count ogrinfo reads in file, or -1 without GDAL (unless
// GEOFLOW_REQUIRE_GDAL=1, which makes that a failure).
func ogrCount(t *testing.T, file string) int {
	t.Helper()
	if _, err := exec.LookPath("ogrinfo"); err != nil {
		if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but ogrinfo is missing: %v", err)
		}
		t.Skipf("ogrinfo missing: %v", err)
	}
	out, err := exec.Command("ogrinfo", "-ro", "-al", "-so", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %s: %v\n%s", file, err, out)
	}
	var n int
	if m := regexp.MustCompile(`Feature Count: (\d+)`).FindSubmatch(out); m != nil {
		fmt.Sscan(string(m[1]), &n)
	}
	return n
}
