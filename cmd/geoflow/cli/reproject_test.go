package cli_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// TestReprojectOracle holds target.srs to GDAL: the dev WFS's parcels, written as
// GeoJSON and converted by `ogr2ogr -t_srs EPSG:code`, against the same parcels harvested
// by a flow with target.srs EPSG:code into each store, read back as stored (by ogr2ogr,
// without conversion), vertex by vertex: at most a millimetre apart. Cases: ETRS89 / UTM
// 32N around Munich, and NAD83 / UTM 15N around Minneapolis. It needs GDAL: without it
// the test skips, unless GEOFLOW_REQUIRE_GDAL=1 makes that a failure.
func TestReprojectOracle(t *testing.T) {
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but ogr2ogr is not on PATH: %v", err)
		}
		t.Skipf("ogr2ogr missing (GDAL is only for checks): %v", err)
	}
	cases := []struct {
		name   string
		code   int
		extent orb.Bound
	}{
		{name: "ETRS89 UTM 32N", code: 25832, extent: orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}},
		{name: "NAD83 UTM 15N", code: 26915, extent: orb.Bound{Min: orb.Point{-93.35, 44.9}, Max: orb.Point{-93.15, 45.05}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := wfsserver.New(wfsserver.Options{Features: 400, CountDefault: 200, ImplementsSorting: true, Extent: c.extent})
			srv := httptest.NewServer(fx)
			t.Cleanup(srv.Close)
			want := oracleFeatures(t, fx, c.code)
			eachStore(t, func(t *testing.T, db string) {
				flow := fmt.Sprintf(`name: reproject
defaults:
  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: %s/wfs
    typename: gf:parcels
    target: {table: parcels_proj, srs: "EPSG:%d"}
`, srv.URL, c.code)
				env := map[string]string{"GEOFLOW_DATABASE_URL": db}
				if code, _, errs := geoflow(t, env, "run", writeFlow(t, flow), "--progress", "off", "--log-level", "warn"); code != 0 {
					t.Fatalf("geoflow run: exit %d\n%s", code, errs)
				}
				src := db
				if !testdb.IsGeoPackage(db) {
					src = pgConninfo(t, db)
				}
				got := ogrFeatures(t, src, "parcels_proj", "gf_feature_id")
				worst, vertices := compareVertices(t, want, got)
				t.Logf("EPSG:%d: %d features, %d vertices: max difference from ogr2ogr -t_srs %.3g m", c.code, len(got), vertices, worst)
				if len(got) != len(want) || !(worst <= 1e-3) {
					t.Errorf("%d features stored (want %d), max difference %.3g m (want <= 0.001)", len(got), len(want), worst)
				}
			})
		})
	}
}

// pgConninfo turns a PostgreSQL URL into GDAL's PG: data source, in libpq's key=value
// form (GDAL mangles the URL form's query string).
func pgConninfo(t *testing.T, db string) string {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("PG:host=%s port=%s dbname=%s user=%s", u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), u.User.Username())
	if pw, ok := u.User.Password(); ok {
		s += " password=" + pw
	}
	return s
}

// oracleFeatures writes fx's parcels as lon/lat GeoJSON, has ogr2ogr convert them to
// EPSG:code and returns them by id.
func oracleFeatures(t *testing.T, fx *wfsserver.Server, code int) map[string]orb.Geometry {
	t.Helper()
	fc := geojson.NewFeatureCollection()
	for i := range fx.Indexes() {
		f := fx.Feature(i)
		g := geojson.NewFeature(f.Geometry)
		g.Properties["fid"] = f.ID
		fc.Append(g)
	}
	b, err := json.Marshal(fc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "parcels.geojson"), filepath.Join(dir, "projected.geojson")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ogr2ogr", "-f", "GeoJSON", "-t_srs", fmt.Sprintf("EPSG:%d", code), out, in)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ogr2ogr -t_srs EPSG:%d: %v\n%s", code, err, msg)
	}
	return readGeoJSON(t, out, "fid")
}

// ogrFeatures reads layer of src as stored (ogr2ogr to GeoJSON, no conversion) and
// returns its geometries by the property idProp.
func ogrFeatures(t *testing.T, src, layer, idProp string) map[string]orb.Geometry {
	t.Helper()
	out := filepath.Join(t.TempDir(), "stored.geojson")
	cmd := exec.Command("ogr2ogr", "-f", "GeoJSON", out, src, layer)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ogr2ogr reading %s: %v\n%s", layer, err, msg)
	}
	return readGeoJSON(t, out, idProp)
}

func readGeoJSON(t *testing.T, path, idProp string) map[string]orb.Geometry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := geojson.UnmarshalFeatureCollection(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]orb.Geometry{}
	for _, f := range fc.Features {
		out[fmt.Sprint(f.Properties[idProp])] = f.Geometry
	}
	return out
}

// compareVertices returns the largest distance between corresponding vertices of the
// geometries of got and want with one id, and how many vertices it compared; a feature
// missing or of another shape fails t.
func compareVertices(t *testing.T, want, got map[string]orb.Geometry) (worst float64, n int) {
	t.Helper()
	for id, g := range got {
		w, ok := want[id]
		if !ok {
			t.Errorf("%s stored, not in the source", id)
			continue
		}
		a, b := vertices(g), vertices(w)
		if len(a) != len(b) {
			t.Errorf("%s: %d vertices stored, %d converted by ogr2ogr", id, len(a), len(b))
			continue
		}
		for i := range a {
			worst = math.Max(worst, math.Hypot(a[i][0]-b[i][0], a[i][1]-b[i][1]))
			n++
		}
	}
	return worst, n
}

// vertices lists every coordinate of a polygon or multipolygon, in order.
func vertices(g orb.Geometry) []orb.Point {
	var out []orb.Point
	switch g := g.(type) {
	case orb.Polygon:
		for _, r := range g {
			out = append(out, r...)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				out = append(out, r...)
			}
		}
	}
	return out
}
