package flatgeobuf

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// requireGDAL finds ogrinfo and ogr2ogr, as the GeoPackage export's tests do: without
// them the GDAL checks skip, unless GEOFLOW_REQUIRE_GDAL=1 makes that a failure.
func requireGDAL(t *testing.T) {
	t.Helper()
	if testing.Short() && os.Getenv("GEOFLOW_REQUIRE_GDAL") != "1" {
		t.Skip("GDAL checks take a while; skipped in -short mode")
	}
	for _, tool := range []string{"ogrinfo", "ogr2ogr"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
				t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but %s is missing: %v", tool, err)
			}
			t.Skipf("%s missing (GDAL is only for checks): %v", tool, err)
		}
	}
}

// gdal runs a GDAL tool and returns its output, failing the test when it fails or
// writes an error.
func gdal(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "ERROR") {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// mixedLayer is a layer of every column type, and features of every geometry type (one
// without a geometry) with all, some or none of the properties; want is each feature as
// GDAL gives it back in GeoJSON, by its "k".
func mixedLayer() (l Layer, fs []*spatial.Feature, want map[int64]*geojson.Feature) {
	l = Layer{Name: "mixed", SRID: 4326, Title: "Mixed", Description: "a bit of everything", Columns: []store.Column{
		{Name: "k", Type: store.TypeBigint},
		{Name: "label", Type: store.TypeText},
		{Name: "ratio", Type: store.TypeDouble},
		{Name: "price", Type: store.TypeNumeric},
		{Name: "open", Type: store.TypeBoolean},
		{Name: "day", Type: store.TypeDate},
		{Name: "seen", Type: store.TypeTimestamptz},
		{Name: "extra", Type: store.TypeJSONB},
		{Name: "Odd Name", Property: "odd"},
	}}
	pg := orb.Polygon{{{11, 48}, {11.1, 48}, {11.1, 48.1}, {11, 48}}, {{11.02, 48.01}, {11.05, 48.01}, {11.05, 48.05}, {11.02, 48.01}}}
	geoms := []orb.Geometry{
		orb.Point{11.5, 48.1}, orb.LineString{{11, 48}, {11.2, 48.3}}, pg, orb.MultiPoint{{11, 48}, {11.3, 48.4}},
		orb.MultiLineString{{{11, 48}, {12, 49.5}}, {{11.5, 48.5}, {11.6, 48.6}, {11.7, 48.5}}},
		orb.MultiPolygon{pg, {{{12, 49}, {12.1, 49}, {12.1, 49.1}, {12, 49}}}},
		orb.Collection{orb.Point{10.5, 47.5}, orb.LineString{{10, 47}, {10.1, 47.1}}, pg},
		nil, pg[0], orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}},
	}
	want = map[int64]*geojson.Feature{}
	for i, g := range geoms {
		p := map[string]any{"k": float64(i), "label": fmt.Sprintf("f%d é", i), "ratio": float64(i) / 4, "price": "10.25",
			"open": i%2 == 0, "day": "2001-02-03", "seen": "2020-05-06T07:08:09+02:00", "extra": map[string]any{"i": i}, "odd": "x"}
		w := geojson.Properties{"k": float64(i), "label": fmt.Sprintf("f%d é", i), "ratio": float64(i) / 4, "price": 10.25,
			"open": i%2 == 0, "day": "2001-02-03T00:00:00", "seen": "2020-05-06T05:08:09Z", "extra": map[string]any{"i": float64(i)}, "Odd Name": "x"}
		if i == 3 {
			p = map[string]any{"k": int64(i), "label": ""}
			w = geojson.Properties{"k": float64(i), "label": ""}
		}
		fs = append(fs, &spatial.Feature{ID: fmt.Sprint(i), Geometry: g, Properties: p})
		switch g := g.(type) {
		case orb.Ring:
			geoms[i] = orb.Polygon{g}
		case orb.Bound:
			geoms[i] = g.ToPolygon()
		}
		want[int64(i)] = &geojson.Feature{Type: "Feature", Geometry: geoms[i], Properties: w}
	}
	return l, fs, want
}

// TestWriteGDALRoundTrip writes every geometry and column type, with and without the
// index, and has GDAL read it back as GeoJSON.
func TestWriteGDALRoundTrip(t *testing.T) {
	requireGDAL(t)
	l, fs, want := mixedLayer()
	for _, tc := range []struct {
		name    string
		noIndex bool
	}{{"indexed", false}, {"no index", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mixed.fgb")
			if _, err := Write(context.Background(), path, l, sliceSource(fs), &Options{NoIndex: tc.noIndex}); err != nil {
				t.Fatal(err)
			}
			gj := filepath.Join(dir, "mixed.geojson")
			gdal(t, "ogr2ogr", "-f", "GeoJSON", gj, path)
			b, err := os.ReadFile(gj)
			if err != nil {
				t.Fatal(err)
			}
			fc, err := geojson.UnmarshalFeatureCollection(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(fc.Features) != len(want) {
				t.Fatalf("GDAL read %d features, want %d", len(fc.Features), len(want))
			}
			for _, f := range fc.Features {
				k, _ := f.Properties["k"].(float64)
				w := want[int64(k)]
				if w == nil {
					t.Fatalf("GDAL read a feature with k %v", f.Properties["k"])
				}
				if !geomEqual(f.Geometry, w.Geometry) {
					t.Errorf("feature %v: geometry %v, want %v", k, f.Geometry, w.Geometry)
				}
				if !reflect.DeepEqual(map[string]any(f.Properties), map[string]any(w.Properties)) {
					t.Errorf("feature %v: properties\n%v\nwant\n%v", k, f.Properties, w.Properties)
				}
			}
		})
	}
}

// geomEqual compares geometries, nil included.
func geomEqual(a, b orb.Geometry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return orb.Equal(a, b)
}

// TestWriteGDALInfo has ogrinfo summarise files: count, extent, geometry type, fields,
// CRS.
func TestWriteGDALInfo(t *testing.T) {
	requireGDAL(t)
	l, fs, _ := mixedLayer()
	for _, tc := range []struct {
		name     string
		layer    Layer
		features []*spatial.Feature
		summary  []string // what ogrinfo -so -al says
	}{
		{"every column and geometry type", l, fs, []string{"Layer name: mixed", "Geometry: Unknown (any)",
			"Feature Count: 10", "Extent: (1.000000, 2.000000) - (12.100000, 49.500000)", `ID["EPSG",4326]`,
			"k: Integer64", "label: String", "ratio: Real", "price: Real", "open: Integer(Boolean)", "day: DateTime",
			"seen: DateTime", "extra: String", "Odd Name: String"}},
		{"parcels", Layer{Name: "parcels", SRID: 4326, Columns: parcelColumns}, features(1000, parcel),
			[]string{"Geometry: Polygon", "Feature Count: 1000", "Extent: (11.430000, 48.050000) - (11.556400, 48.051170)",
				"name: String", "area: Real", "floors: Integer64", "built: DateTime"}},
		{"multipoints and multipolygons are mixed", Layer{Name: "multis", SRID: 4326}, []*spatial.Feature{
			{Geometry: orb.MultiPoint{{1, 2}}}, {Geometry: orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}}},
			[]string{"Geometry: Unknown (any)", "Feature Count: 2", "Extent: (0.000000, 0.000000) - (1.000000, 2.000000)"}},
		{"empty", Layer{Name: "nothing", SRID: 4326, Columns: parcelColumns}, nil,
			[]string{"Geometry: Unknown (any)", "Feature Count: 0", "name: String"}},
		{"projected CRS", Layer{Name: "utm", SRID: 25832}, []*spatial.Feature{{Geometry: orb.Point{690000, 5330000}}},
			[]string{"Geometry: Point", "Feature Count: 1", `ID["EPSG",25832]`, "Extent: (690000.000000, 5330000.000000) - (690000.000000, 5330000.000000)"}},
		{"another CRS", Layer{Name: "finland", SRID: 3067}, []*spatial.Feature{{Geometry: orb.Point{400000, 7000000}}},
			[]string{"Feature Count: 1", "ETRS89 / TM35FIN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.layer.Name+".fgb")
			n, err := Write(context.Background(), path, tc.layer, sliceSource(tc.features), nil)
			if err != nil || n != int64(len(tc.features)) {
				t.Fatalf("Write = %d, %v; want %d", n, err, len(tc.features))
			}
			out := gdal(t, "ogrinfo", "-so", "-al", path)
			for _, w := range tc.summary {
				if !strings.Contains(out, w) {
					t.Errorf("ogrinfo -so -al does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestWriteGDALIndex queries files through GDAL's use of the index (ogrinfo -spat) and
// compares the count with brute force. The features are points and axis-aligned
// rectangles, whose boxes are their geometries, so that GDAL's exact test after the
// index agrees with a test of boxes; one in 97 has no geometry, which no query finds.
func TestWriteGDALIndex(t *testing.T) {
	requireGDAL(t)
	box := func(i int) (orb.Bound, bool) {
		if i%97 == 0 {
			return orb.Bound{}, false
		}
		x, y := float64((i*7919)%1000)/10, float64((i*104729)%1000)/10 // scattered over 0..100
		w, h := float64(i%5)/2, float64(i%3)/2
		return orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + w, y + h}}, true
	}
	feature := func(i int) *spatial.Feature {
		b, ok := box(i)
		f := &spatial.Feature{ID: fmt.Sprint(i), Properties: map[string]any{"i": float64(i)}}
		switch {
		case !ok:
		case b.Min == b.Max:
			f.Geometry = b.Min
		default:
			f.Geometry = b.ToPolygon()
		}
		return f
	}
	queries := []orb.Bound{
		{Min: orb.Point{10.05, 10.05}, Max: orb.Point{20.05, 30.05}}, {Min: orb.Point{-1, -1}, Max: orb.Point{101, 101}},
		{Min: orb.Point{50.01, 0}, Max: orb.Point{50.03, 100}}, {Min: orb.Point{200, 200}, Max: orb.Point{300, 300}},
		{Min: orb.Point{33.33, 66.66}, Max: orb.Point{33.34, 66.67}},
	}
	for _, n := range []int{1, 15, 16, 17, 300, 5000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boxes.fgb")
			layer := Layer{Name: "boxes", SRID: 3857, Columns: []store.Column{{Name: "i", Type: store.TypeBigint}}}
			if _, err := Write(context.Background(), path, layer, &testSource{n: n, make: feature}, nil); err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				want := 0
				for i := 1; i <= n; i++ {
					if b, ok := box(i); ok && b.Intersects(q) {
						want++
					}
				}
				out := gdal(t, "ogrinfo", "-so", "-al", "-spat", fmt.Sprint(q.Min[0]), fmt.Sprint(q.Min[1]),
					fmt.Sprint(q.Max[0]), fmt.Sprint(q.Max[1]), path)
				if got := featureCount(t, out); got != want {
					t.Errorf("query %v: GDAL counts %d, brute force %d", q, got, want)
				}
			}
			if got := featureCount(t, gdal(t, "ogrinfo", "-so", "-al", path)); got != n {
				t.Errorf("without a query GDAL counts %d, want %d", got, n)
			}
		})
	}
}

// TestWriteGDALUsesIndex makes sure that the count of TestWriteGDALIndex comes from the
// index: once the root's box is moved away, GDAL finds nothing in a query that matched,
// and still every feature without one.
func TestWriteGDALUsesIndex(t *testing.T) {
	requireGDAL(t)
	path := filepath.Join(t.TempDir(), "parcels.fgb")
	if _, err := Write(context.Background(), path, Layer{Name: "parcels", SRID: 4326, Columns: parcelColumns}, &testSource{n: 2000, make: parcel}, nil); err != nil {
		t.Fatal(err)
	}
	query := []string{"-spat", "11.45", "48.05", "11.46", "48.0505"}
	if got := featureCount(t, gdal(t, "ogrinfo", append(append([]string{"-so", "-al"}, query...), path)...)); got != 54 {
		t.Fatalf("the query finds %d parcels, want 54", got)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root := 12 + int(binary.LittleEndian.Uint32(data[8:]))
	for i, v := range []float64{0, 0, 1, 1} { // the root's box, somewhere else
		binary.LittleEndian.PutUint64(data[root+8*i:], math.Float64bits(v))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := featureCount(t, gdal(t, "ogrinfo", append(append([]string{"-so", "-al"}, query...), path)...)); got != 0 {
		t.Errorf("with the root moved away the query finds %d parcels: GDAL did not use the index", got)
	}
	if got := featureCount(t, gdal(t, "ogrinfo", "-so", "-al", path)); got != 2000 {
		t.Errorf("without a query GDAL counts %d, want 2000", got)
	}
}

var featureCountRE = regexp.MustCompile(`Feature Count: (\d+)`)

// featureCount is the count ogrinfo says.
func featureCount(t *testing.T, out string) int {
	t.Helper()
	m := featureCountRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ogrinfo gives no count:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// features is n features made by mk.
func features(n int, mk func(int) *spatial.Feature) []*spatial.Feature {
	fs := make([]*spatial.Feature, n)
	for i := range fs {
		fs[i] = mk(i + 1)
	}
	return fs
}
