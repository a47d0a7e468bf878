package export_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/store"
)

// formats are the files the tests write, one per format (both forms of GeoJSON sequence).
var formats = []string{"out.gpkg", "out.fgb", "out.geojsons", "out.geojsonl"}

// wantTypes are the field types GDAL reads in each format for parcelsTable's columns
// and gf_feature_id: the table's types as near as the format has them.
var wantTypes = map[string]map[string]string{
	"out.gpkg": {"name": "String", "n": "Integer64", "area": "Real", "ok": "Integer(Boolean)", "day": "Date", "gf_feature_id": "String"},
	"out.fgb":  {"name": "String", "n": "Integer64", "area": "Real", "ok": "Integer(Boolean)", "day": "DateTime", "gf_feature_id": "String"},
	// GDAL types a GeoJSON property by its values: integers, reals, booleans, and a
	// date's text as a Date; the feature's id (text) becomes the field id.
	"out.geojsons": {"id": "String", "name": "String", "n": "Integer", "area": "Real", "ok": "Integer(Boolean)", "day": "Date"},
	"out.geojsonl": {"id": "String", "name": "String", "n": "Integer", "area": "Real", "ok": "Integer(Boolean)", "day": "Date"},
}

// ogrSummary is what ogrinfo -so says of a file's one layer.
type ogrSummary struct {
	count  int
	extent orb.Bound
	fields map[string]string // name: type
	order  []string
}

var (
	countRE  = regexp.MustCompile(`(?m)^Feature Count: (\d+)`)
	extentRE = regexp.MustCompile(`(?m)^Extent: \(([-\d.e+]+), ([-\d.e+]+)\) - \(([-\d.e+]+), ([-\d.e+]+)\)`)
	fieldRE  = regexp.MustCompile(`(?m)^(\w+): (\w+(?:\(\w+\))?) \(`)
)

func summary(t *testing.T, file string) ogrSummary {
	t.Helper()
	out := gdal(t, "ogrinfo", "-ro", "-al", "-so", file)
	var s ogrSummary
	m := countRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ogrinfo %s: no feature count in\n%s", file, out)
	}
	s.count, _ = strconv.Atoi(m[1])
	if e := extentRE.FindStringSubmatch(out); e != nil {
		v := make([]float64, 4)
		for i := range v {
			v[i], _ = strconv.ParseFloat(e[i+1], 64)
		}
		s.extent = orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}
	}
	s.fields = map[string]string{}
	for _, f := range fieldRE.FindAllStringSubmatch(out, -1) {
		if f[1] == "Geometry" || f[1] == "FID" || f[1] == "Layer" || f[1] == "Extent" {
			continue
		}
		s.fields[f[1]] = f[2]
		s.order = append(s.order, f[1])
	}
	return s
}

// gdalFeatures are the features of file as GDAL reads them (as GeoJSON), by id: the
// gf_feature_id field, or a GeoJSON sequence's id.
func gdalFeatures(t *testing.T, file string, args ...string) map[string]map[string]any {
	t.Helper()
	out := gdal(t, "ogr2ogr", append([]string{"-f", "GeoJSON", "/vsistdout/", file}, args...)...)
	var fc struct {
		Features []struct {
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(out), &fc); err != nil {
		t.Fatalf("ogr2ogr %s: %v\n%s", file, err, out)
	}
	byID := map[string]map[string]any{}
	for _, f := range fc.Features {
		id, _ := f.Properties["gf_feature_id"].(string)
		if id == "" {
			id, _ = f.Properties["id"].(string)
		}
		byID[id] = f.Properties
	}
	return byID
}

// storeRows reads q's rows of table, by id.
func storeRows(t *testing.T, r reader, table string, q store.FeatureQuery) map[string]*store.StoredFeature {
	t.Helper()
	st, err := r.StoredTable(context.Background(), "", table)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*store.StoredFeature{}
	if err := r.ReadFeatures(context.Background(), st, q, func(f *store.StoredFeature) error { out[f.ID] = f; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameValue tells whether GDAL's value (from GeoJSON) is the store's.
func sameValue(gdal, stored any) bool {
	switch s := stored.(type) {
	case int64:
		g, ok := gdal.(float64)
		return ok && g == float64(s)
	case float64:
		g, ok := gdal.(float64)
		return ok && math.Abs(g-s) < 1e-12
	case bool:
		g, ok := gdal.(bool)
		if !ok { // an Integer(Boolean) GeoJSON writes as true and false; a plain integer as 0/1
			f, _ := gdal.(float64)
			return (f != 0) == s
		}
		return g == s
	case string:
		g := fmt.Sprint(gdal)
		return g == s || strings.HasPrefix(g, strings.TrimSuffix(s, "T00:00:00Z")) || strings.ReplaceAll(g, "/", "-") == s
	}
	return fmt.Sprint(gdal) == fmt.Sprint(stored)
}

// TestExportGDAL: every format, from both stores, is read by GDAL with the table's
// feature count, extent, columns (names and types) and values.
func TestExportGDAL(t *testing.T) {
	requireGDAL(t)
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			r := asReader(t, sk.open(t))
			fill(t, r, parcelsTable("parcels", 4326), parcels(30))
			st, err := r.StoredTable(context.Background(), "", "parcels")
			if err != nil {
				t.Fatal(err)
			}
			rows := storeRows(t, r, "parcels", store.FeatureQuery{})
			for _, name := range formats {
				t.Run(name, func(t *testing.T) {
					file := filepath.Join(t.TempDir(), name)
					res, err := export.Write(context.Background(), export.Spec{Table: "parcels", Path: file}, r)
					if err != nil || res.Features != 30 || res.Bytes <= 0 {
						t.Fatalf("Write = %+v, %v; want 30 features", res, err)
					}
					s := summary(t, file)
					if s.count != 30 || !nearBound(s.extent, *st.Extent, 1e-6) {
						t.Errorf("GDAL reads %d features in %v, want 30 in %v", s.count, s.extent, *st.Extent)
					}
					if !mapsEqual(s.fields, wantTypes[name]) {
						t.Errorf("GDAL reads the fields %v, want %v", s.fields, wantTypes[name])
					}
					checkValues(t, gdalFeatures(t, file), rows)
				})
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func nearBound(a, b orb.Bound, tol float64) bool {
	for i := range 2 {
		if math.Abs(a.Min[i]-b.Min[i]) > tol || math.Abs(a.Max[i]-b.Max[i]) > tol {
			return false
		}
	}
	return true
}

// checkValues holds GDAL's features to the store's rows: the same ids, and each
// column's value (a null where the row has none).
func checkValues(t *testing.T, got map[string]map[string]any, rows map[string]*store.StoredFeature) {
	t.Helper()
	if len(got) != len(rows) {
		t.Errorf("GDAL reads %d features, the store %d", len(got), len(rows))
	}
	for id, f := range rows {
		g, ok := got[id]
		if !ok {
			t.Errorf("feature %s is not in the file", id)
			continue
		}
		for _, col := range []string{"name", "n", "area", "ok", "day"} {
			want, has := f.Properties[col]
			if v := g[col]; (v == nil) != !has || (has && !sameValue(v, want)) {
				t.Errorf("%s.%s = %v (%T), want %v (%T)", id, col, v, v, want, want)
			}
		}
	}
}

// TestExportSpatialFilter: GDAL's spatial filter on the FlatGeobuf (through its
// R-tree) finds exactly the features the store finds in the same box.
func TestExportSpatialFilter(t *testing.T) {
	requireGDAL(t)
	boxes := []orb.Bound{
		{Min: orb.Point{11.41, 48.06}, Max: orb.Point{11.47, 48.09}},
		{Min: orb.Point{11.3, 48.0}, Max: orb.Point{11.405, 48.1}},
		{Min: orb.Point{11.5, 48.1}, Max: orb.Point{11.6, 48.2}},
		{Min: orb.Point{12, 49}, Max: orb.Point{12.1, 49.1}},
	}
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			r := asReader(t, sk.open(t))
			fill(t, r, parcelsTable("parcels", 4326), parcels(60))
			file := filepath.Join(t.TempDir(), "all.fgb")
			if _, err := export.Write(context.Background(), export.Spec{Table: "parcels", Path: file}, r); err != nil {
				t.Fatal(err)
			}
			for i, b := range boxes {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					want := slices.Sorted(mapsKeys(storeRows(t, r, "parcels", store.FeatureQuery{BBox: &b})))
					got := slices.Sorted(mapsKeys(gdalFeatures(t, file, "-spat", ftoa(b.Min[0]), ftoa(b.Min[1]), ftoa(b.Max[0]), ftoa(b.Max[1]))))
					if !slices.Equal(got, want) {
						t.Errorf("ogr2ogr -spat %v finds %q, the store %q", b, got, want)
					}
				})
			}
		})
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestExportOptions: bbox, where, columns (in the order asked) and srs, from both
// stores; the GeoPackage passes GDAL's validator; an empty result is a valid empty file.
func TestExportOptions(t *testing.T) {
	requireGDAL(t)
	box := orb.Bound{Min: orb.Point{11.41, 48.06}, Max: orb.Point{11.47, 48.09}}
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			r := asReader(t, sk.open(t))
			fill(t, r, parcelsTable("parcels", 4326), parcels(30))
			dir := t.TempDir()
			spec := export.Spec{Table: "parcels", Path: filepath.Join(dir, "some.gpkg"), BBox: &box, Where: "n >= 100", Columns: []string{"day", "name"}}
			res, err := export.Write(context.Background(), spec, r)
			if err != nil {
				t.Fatal(err)
			}
			want := storeRows(t, r, "parcels", store.FeatureQuery{BBox: &box, Where: "n >= 100"})
			s := summary(t, spec.Path)
			if int(res.Features) != len(want) || s.count != len(want) || len(want) == 0 {
				t.Errorf("wrote %d, GDAL reads %d, want %d (not none)", res.Features, s.count, len(want))
			}
			if !slices.Equal(s.order, []string{"day", "name", "gf_feature_id"}) {
				t.Errorf("fields %q, want day, name, gf_feature_id", s.order)
			}
			gdal(t, "python3", validator, "--extra", "--warning-as-error", spec.Path)

			merc := export.Spec{Table: "parcels", Path: filepath.Join(dir, "merc.fgb"), SRID: 3857}
			if _, err := export.Write(context.Background(), merc, r); err != nil {
				t.Fatal(err)
			}
			if out := gdal(t, "ogrinfo", "-ro", "-al", "-so", merc.Path); !strings.Contains(out, `ID["EPSG",3857]`) || summary(t, merc.Path).extent.Min[0] < 1e6 {
				t.Errorf("an export in EPSG:3857 reads as\n%s", out)
			}
			for _, name := range []string{"none.gpkg", "none.fgb", "none.geojsonl"} {
				empty := export.Spec{Table: "parcels", Path: filepath.Join(dir, name), Where: "1 = 0"}
				if res, err := export.Write(context.Background(), empty, r); err != nil || res.Features != 0 {
					t.Fatalf("%s: %+v, %v", name, res, err)
				}
				if name == "none.geojsonl" {
					if fi, _ := os.Stat(empty.Path); fi == nil || fi.Size() != 0 {
						t.Errorf("an empty GeoJSON sequence: %v, want an empty file", fi)
					}
					continue // GDAL (3.6) opens no sequence without a feature
				}
				if s := summary(t, empty.Path); s.count != 0 {
					t.Errorf("%s: GDAL reads %d features, want 0", name, s.count)
				}
			}
			gdal(t, "python3", validator, "--extra", "--warning-as-error", filepath.Join(dir, "none.gpkg"))
		})
	}
}

// TestExportAtomic: a store failing part way through leaves the previous file as it
// was, and no temporary file, in every format.
func TestExportAtomic(t *testing.T) {
	for _, sk := range stores {
		t.Run(sk.name, func(t *testing.T) {
			r := asReader(t, sk.open(t))
			fill(t, r, parcelsTable("parcels", 4326), parcels(30))
			for _, name := range formats {
				dir := t.TempDir()
				file := filepath.Join(dir, name)
				if err := os.WriteFile(file, []byte("the previous file"), 0o644); err != nil {
					t.Fatal(err)
				}
				_, err := export.Write(context.Background(), export.Spec{Table: "parcels", Path: file}, failingReader{reader: r, after: 12})
				if !errors.Is(err, errMidway) {
					t.Errorf("%s: %v, want the store's error", name, err)
				}
				if b, _ := os.ReadFile(file); string(b) != "the previous file" {
					t.Errorf("%s: the file is now %d bytes, want it as it was", name, len(b))
				}
				if left, _ := os.ReadDir(dir); len(left) != 1 {
					t.Errorf("%s: the directory holds %d files, want the one", name, len(left))
				}
			}
		})
	}
}

// TestExportErrors: an unknown table names the stored ones, an unknown column the
// nearest, an unknown format the ones there are; a GeoJSON sequence is lon/lat only.
func TestExportErrors(t *testing.T) {
	r := asReader(t, stores[1].open(t))
	fill(t, r, parcelsTable("parcels", 4326), parcels(3))
	dir := t.TempDir()
	tests := []struct {
		name string
		spec export.Spec
		want string
	}{
		{name: "unknown table", spec: export.Spec{Table: "parcel", Path: dir + "/a.fgb"}, want: `no table "parcel" that geoflow wrote (did you mean "parcels"?); the stored tables: parcels`},
		{name: "unknown column", spec: export.Spec{Table: "parcels", Path: dir + "/a.fgb", Columns: []string{"nme"}}, want: `has no column "nme" (did you mean "name"?); its columns: name, n, area, ok, day`},
		{name: "unknown extension", spec: export.Spec{Table: "parcels", Path: dir + "/a.shp"}, want: `no format for the extension ".shp"`},
		{name: "unknown format", spec: export.Spec{Table: "parcels", Path: dir + "/a.fgb", Format: "kml"}, want: `unknown format "kml"`},
		{name: "GeoJSON in UTM", spec: export.Spec{Table: "parcels", Path: dir + "/a.geojsons", SRID: 25832}, want: "lon/lat (RFC 7946)"},
		{name: "two statements", spec: export.Spec{Table: "parcels", Path: dir + "/a.fgb", Where: "true; select 1"}, want: "not one SQL expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := export.Write(context.Background(), tt.spec, r)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Write = %v, want an error saying %q", err, tt.want)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("left %d files", len(left))
			}
		})
	}
}

// TestExportMakesDirectory: a file in a directory that is not there yet is written, the
// directory made, as a flow's first run needs.
func TestExportMakesDirectory(t *testing.T) {
	r := asReader(t, stores[1].open(t))
	fill(t, r, parcelsTable("parcels", 4326), parcels(3))
	path := filepath.Join(t.TempDir(), "out", "daily", "parcels.fgb")
	res, err := export.Write(context.Background(), export.Spec{Table: "parcels", Path: path}, r)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || res.Features != 3 || fi.Size() != res.Bytes {
		t.Errorf("wrote %d features, %d bytes; the file: %v, %v", res.Features, res.Bytes, fi, err)
	}
}
