package cli_test

import (
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
)

// The queries of TestExportQuery. On PostGIS the summary dissolves the parcels of each
// zone (ST_Union) and the export writes it; a GeoPackage has no ST_Union, so its
// summary is a plain aggregate and the export joins it back onto the parcels, whose
// geometries it carries. The join runs on both.
const (
	dissolveSQL = `drop table if exists zoning_summary;
        create table zoning_summary as
        select zone, count(*) as parcels, sum(area_m2) as area_m2, ST_Union(geom) as geom
          from parcels group by zone;`
	summarySQL = `drop table if exists zoning_summary;
        create table zoning_summary as
        select zone, count(*) as parcels, sum(area_m2) as area_m2 from parcels group by zone;`
	zonesQuery = `select zone, parcels, area_m2, geom from zoning_summary order by zone`
	joinQuery  = `select p.parcel_id, p.zone, s.parcels as zone_parcels, s.area_m2 as zone_area_m2, p.geom
          from parcels p join zoning_summary s on s.zone = p.zone order by p.parcel_id`
)

// exportQueryFlow harvests the sample WFS into parcels, summarises them by zone (script)
// and exports query zones as a FlatGeobuf and (in Web Mercator) a GeoPackage, and the
// join as a GeoJSON sequence.
func exportQueryFlow(url, dir, script, zones string) string {
	indent := func(s string) string { return strings.ReplaceAll(s, "\n", "\n      ") }
	return fmt.Sprintf(`name: exportquery
defaults:
  retry: {max_attempts: 3, base_delay: 1ms, max_delay: 10ms}
  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: %[1]s/wfs
    typename: gf:parcels
    target: {table: parcels, mode: mirror}
  summary:
    type: sql
    depends_on: [parcels]
    sql: |
      %[3]s
  zones_fgb:
    type: export
    depends_on: [summary]
    query: |
      %[4]s
    path: %[2]s/zones.fgb
  zones_gpkg:
    type: export
    depends_on: [summary]
    query: |
      %[4]s
    srs: EPSG:3857
    path: %[2]s/zones.gpkg
  joined:
    type: export
    depends_on: [summary, parcels]
    query: |
      %[5]s
    columns: [parcel_id, zone, zone_parcels]
    path: %[2]s/joined.geojsons
`, url, dir, indent(script), indent(zones), indent(joinQuery))
}

// TestExportQuery: a flow's SQL step makes a summary that exports of a query write as
// FlatGeobuf, GeoPackage and GeoJSON sequence, which GDAL reads with their features,
// fields and extent; a rerun whose results are the same leaves the files as they were
// (the same inode and mtime), one after a change upstream writes them again; geoflow
// export --sql writes a query's result; the query's errors say what is wrong.
func TestExportQuery(t *testing.T) { eachStore(t, testExportQuery) }

func testExportQuery(t *testing.T, db string) {
	changes := wfsserver.Changes{Edited: 20}
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
	script, zones := dissolveSQL, zonesQuery
	if testdb.IsGeoPackage(db) {
		script, zones = summarySQL, joinQuery
	}
	flow := writeFlow(t, exportQueryFlow(srv.URL, dir, script, zones))
	run(0, "run", flow, "--progress", "off")
	nZones := int(testdb.Count(t, db, "select count(*) from zoning_summary"))
	nJoined := int(testdb.Count(t, db, "select count(*) from parcels where zone in (select zone from zoning_summary)"))
	wantZones := nZones
	if testdb.IsGeoPackage(db) {
		wantZones = nJoined
	}
	fgb, gpkg, seq := filepath.Join(dir, "zones.fgb"), filepath.Join(dir, "zones.gpkg"), filepath.Join(dir, "joined.geojsons")
	all := filepath.Join(dir, "parcels.fgb")
	run(0, "export", "parcels", all)
	for _, tc := range []struct {
		file   string
		n      int
		fields []string
	}{
		{fgb, wantZones, nil},
		{gpkg, wantZones, nil},
		{seq, nJoined, []string{"parcel_id: String", "zone: String", "zone_parcels: Integer"}},
	} {
		if info := ogrInfo(t, tc.file); info.count != tc.n || !containsAll(info.fields, tc.fields) {
			t.Errorf("%s: GDAL reads %d features with fields %q; want %d with %q", tc.file, info.count, info.fields, tc.n, tc.fields)
		}
	}
	checkZoneFiles(t, db, fgb, gpkg, all)

	before := map[string]fileStat{fgb: statOf(t, fgb), gpkg: statOf(t, gpkg), seq: statOf(t, seq)}
	time.Sleep(20 * time.Millisecond) // a rewrite would have another mtime
	out := run(0, "run", flow, "--progress", "off", "--log-level", "info")
	for f, st := range before {
		if after := statOf(t, f); after != st {
			t.Errorf("a rerun with the same result rewrote %s: %+v, then %+v", f, st, after)
		}
	}
	if n := strings.Count(out, "export: unchanged"); n != 3 {
		t.Errorf("the rerun says %d exports are unchanged, want 3:\n%s", n, out)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("staged files left behind: %q", left)
	}
	// Edits upstream change the parcels' areas, so the summary and every file.
	if err := fx.SetRevision(1, changes); err != nil {
		t.Fatal(err)
	}
	out = run(0, "run", flow, "--progress", "off", "--log-level", "info")
	if after := statOf(t, fgb); after.ino == before[fgb].ino || strings.Count(out, "export: written") != 3 {
		t.Errorf("a run after changes upstream did not write the exports again:\n%s", out)
	}

	cli := filepath.Join(dir, "cli.fgb")
	out = run(0, "export", "--sql", zones, cli)
	if !regexp.MustCompile(fmt.Sprintf(`^%d features of the query written to %s \(fgb, [\d.]+ [kM]?B\) in \S+\n$`, wantZones, regexp.QuoteMeta(cli))).MatchString(out) {
		t.Errorf("geoflow export --sql says %q", out)
	}
	if info := ogrInfo(t, cli); info.count != wantZones || info.layer != "cli" {
		t.Errorf("%s: GDAL reads %d features in layer %q; want %d in cli", cli, info.count, info.layer, wantZones)
	}
	checkQueryErrors(t, db, dir, run)
}

// checkZoneFiles: the zones' extent is that of the parcels (every parcel is in one zone's
// row, the null zone's too, when dissolved; the joined ones lie within it), and the
// GeoPackage's is the FlatGeobuf's in Web Mercator (ogrinfo prints degrees to 1e-6,
// about 0.1 m).
func checkZoneFiles(t *testing.T, db, fgb, gpkg, all string) {
	t.Helper()
	parcels, zones, merc := ogrInfo(t, all).extent, ogrInfo(t, fgb).extent, ogrInfo(t, gpkg).extent
	within := zones[0] >= parcels[0]-1e-9 && zones[1] >= parcels[1]-1e-9 && zones[2] <= parcels[2]+1e-9 && zones[3] <= parcels[3]+1e-9
	same := math.Abs(zones[0]-parcels[0])+math.Abs(zones[1]-parcels[1])+math.Abs(zones[2]-parcels[2])+math.Abs(zones[3]-parcels[3]) < 1e-7
	if !within || (!testdb.IsGeoPackage(db) && !same) {
		t.Errorf("the zones' extent %v, the parcels' %v: want the same (dissolved) or within (joined)", zones, parcels)
	}
	if x := zones[0] * 20037508.342789244 / 180; math.Abs(merc[0]-x) > 0.2 {
		t.Errorf("the GeoPackage's extent %v starts at x %f, want the FlatGeobuf's %v in Web Mercator (%f)", merc, merc[0], zones, x)
	}
}

// checkQueryErrors: what geoflow export --sql and a flow say of a query that is wrong.
func checkQueryErrors(t *testing.T, db, dir string, run func(int, ...string) string) {
	t.Helper()
	unknown := `column "nope" does not exist`
	if testdb.IsGeoPackage(db) {
		unknown = "no such column: nope"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--sql", "select zone from parcels", filepath.Join(dir, "x.fgb")}, "the query's result has no geometry column (its columns: zone)"},
		{[]string{"export", "--sql", "select nope, geom from parcels", filepath.Join(dir, "x.fgb")}, unknown},
		{[]string{"export", "--sql", "select 1; delete from parcels", filepath.Join(dir, "x.fgb")}, "a second statement at line 1, column 11"},
		{[]string{"export", "--sql", "select geom from parcels", "parcels", filepath.Join(dir, "x.fgb")}, "give FILE alone"},
		{[]string{"export", "--sql", "select geom from parcels", filepath.Join(dir, "x.fgb"), "--where", "zone = 'a'"}, "leave out --where"},
		{[]string{"export", "--sql", "select geom, zone from parcels", filepath.Join(dir, "x.fgb"), "--columns", "zonee"}, `no column "zonee" (did you mean "zone"?)`},
	} {
		if out := run(1, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("geoflow %s says\n%s\nwant %q", strings.Join(tc.args, " "), out, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.fgb")); err == nil {
		t.Errorf("a failed export left x.fgb")
	}
}

// ogrSummary is what ogrinfo -so says of a file's one layer.
type ogrSummary struct {
	layer  string
	count  int
	fields []string   // "name: Type"
	extent [4]float64 // minx, miny, maxx, maxy
}

// ogrInfo reads file's summary with ogrinfo; a test without GDAL skips (unless
// GEOFLOW_REQUIRE_GDAL=1, which makes that a failure).
func ogrInfo(t *testing.T, file string) ogrSummary {
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
	var s ogrSummary
	if m := regexp.MustCompile(`Layer name: (\S+)`).FindSubmatch(out); m != nil {
		s.layer = string(m[1])
	}
	if m := regexp.MustCompile(`Feature Count: (\d+)`).FindSubmatch(out); m != nil {
		s.count, _ = strconv.Atoi(string(m[1]))
	}
	if m := regexp.MustCompile(`Extent: \(([-\d.e]+), ([-\d.e]+)\) - \(([-\d.e]+), ([-\d.e]+)\)`).FindSubmatch(out); m != nil {
		for i := range 4 {
			s.extent[i], _ = strconv.ParseFloat(string(m[i+1]), 64)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^(\w+): (\w+) \(`).FindAllSubmatch(out, -1) {
		s.fields = append(s.fields, string(m[1])+": "+string(m[2]))
	}
	return s
}

// containsAll tells whether have holds every one of want.
func containsAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || strings.HasPrefix(h, w)
		}
		if !found {
			return false
		}
	}
	return true
}
