package export_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/spatial"
)

// TestExportQueryGDAL: a query's result, its expressions typed and a column named fid
// renamed, is a GeoPackage the validator accepts and GDAL reads with its fields, a
// FlatGeobuf and a GeoJSON sequence GDAL reads with every feature.
func TestExportQueryGDAL(t *testing.T) {
	requireGDAL(t)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := asReader(t, st.open(t))
			fill(t, s, parcelsTable("parcels", 4326), parcels(30))
			dir := t.TempDir()
			q := "SELECT name, n AS fid, area * 2 AS double_area, ok, geom FROM parcels WHERE n >= 100 ORDER BY n"
			for _, file := range []string{"big.gpkg", "big.fgb", "big.geojsons"} {
				path := filepath.Join(dir, file)
				res, err := export.Write(t.Context(), export.Spec{Query: q, Path: path}, s)
				if err != nil || res.Features != 20 || res.Table != "the query" {
					t.Fatalf("%s: %+v, %v; want 20 features of the query", file, res, err)
				}
				info := gdal(t, "ogrinfo", "-ro", "-al", "-so", path)
				for _, want := range []string{"Layer name: big", "Feature Count: 20", "name: String", "double_area: Real", "(11.4"} {
					if !strings.Contains(info, want) {
						t.Errorf("%s: ogrinfo does not say %q:\n%s", file, want, info)
					}
				}
			}
			gpkg := filepath.Join(dir, "big.gpkg")
			gdal(t, "python3", validator, gpkg)
			if info := gdal(t, "ogrinfo", "-ro", "-al", "-so", gpkg); !strings.Contains(info, "fid_1: Integer64") {
				t.Errorf("the query's column fid is not fid_1 in the GeoPackage:\n%s", info)
			}
		})
	}
}

// TestExportQueryStage: a staged query export has the same fingerprint while the
// result is the same, whatever bytes the format wrote (a GeoPackage records when), and
// another once it changes; Discard leaves the file in place as it was, Commit replaces
// it.
func TestExportQueryStage(t *testing.T) {
	for _, st := range stores {
		for _, file := range []string{"z.gpkg", "z.fgb", "z.geojsonl"} {
			t.Run(st.name+"/"+file, func(t *testing.T) {
				s := asReader(t, st.open(t))
				table := parcelsTable("parcels", 4326)
				fill(t, s, table, parcels(12))
				path := filepath.Join(t.TempDir(), file)
				spec := export.Spec{Query: "SELECT name, n, geom FROM parcels ORDER BY name", Path: path, Columns: []string{"n"}}
				stage := func() *export.Staged {
					t.Helper()
					j, err := export.Prepare(t.Context(), spec, s)
					if err != nil {
						t.Fatal(err)
					}
					staged, err := j.Stage(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					return staged
				}
				first := stage()
				if err := first.Commit(); err != nil {
					t.Fatal(err)
				}
				before, _ := os.Stat(path)
				again := stage()
				if again.Fingerprint != first.Fingerprint || again.Features != 12 {
					t.Errorf("the same result staged again: %d features, fingerprint %s, then %s", again.Features, first.Fingerprint, again.Fingerprint)
				}
				if err := again.Discard(); err != nil {
					t.Fatal(err)
				}
				if after, _ := os.Stat(path); !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
					t.Errorf("Discard touched %s", path)
				}
				fill(t, s, table, []*spatial.Feature{{ID: "new", Geometry: orb.Point{11.5, 48.1}, Properties: map[string]any{"name": "new", "n": int64(1)}}})
				changed := stage()
				if changed.Fingerprint == first.Fingerprint || changed.Features != 13 {
					t.Errorf("a changed result: %d features, the same fingerprint %v", changed.Features, changed.Fingerprint == first.Fingerprint)
				}
				if err := changed.Commit(); err != nil {
					t.Fatal(err)
				}
				if after, _ := os.Stat(path); os.SameFile(before, after) {
					t.Errorf("Commit did not replace %s", path)
				}
				if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) != 0 {
					t.Errorf("staged files left: %q", left)
				}
			})
		}
	}
}

// TestExportQueryRefused: what an export of a query refuses before it runs, and what
// it refuses of the result.
func TestExportQueryRefused(t *testing.T) {
	s := asReader(t, stores[1].open(t))
	fill(t, s, parcelsTable("parcels", 4326), parcels(3))
	dir := t.TempDir()
	box := &orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
	tests := []struct {
		name string
		spec export.Spec
		want string
	}{
		{"and a table", export.Spec{Query: "select geom from parcels", Table: "parcels"}, "give one of them"},
		{"and where", export.Spec{Query: "select geom from parcels", Where: "n > 1"}, "put the condition in the query"},
		{"and a bbox", export.Spec{Query: "select geom from parcels", BBox: box}, "a bbox is not applied around a query"},
		{"two statements", export.Spec{Query: "select geom from parcels; select 1"}, "a second statement"},
		{"a GeoJSON sequence in another CRS", export.Spec{Query: "select geom from parcels", Path: "x.geojsons", SRID: 3857}, "cannot be written in EPSG:3857"},
		{"no geometry", export.Spec{Query: "select name, n from parcels"}, "the query's result has no geometry column (its columns: name, n)"},
		{"an unknown column", export.Spec{Query: "select name, geom from parcels", Columns: []string{"nam"}}, `no column "nam" (did you mean "name"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.spec.Path == "" {
				tt.spec.Path = filepath.Join(dir, "x.fgb")
			}
			_, err := export.Write(t.Context(), tt.spec, s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if _, serr := os.Stat(tt.spec.Path); serr == nil {
				t.Errorf("%s written", tt.spec.Path)
			}
		})
	}
}
