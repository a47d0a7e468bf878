package gpkg

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
)

// exportSource yields n features made by make, then io.EOF; fail, when not nil, is
// returned instead of the feature of that number (1-based) and every one after.
type exportSource struct {
	n, i int
	make func(i int) *spatial.Feature
	fail func(i int) error
}

func (s *exportSource) Next() (*spatial.Feature, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	s.i++
	if s.fail != nil {
		if err := s.fail(s.i); err != nil {
			return nil, err
		}
	}
	return s.make(s.i), nil
}

func exportSlice(fs []*spatial.Feature) *exportSource {
	return &exportSource{n: len(fs), make: func(i int) *spatial.Feature { return fs[i-1] }}
}

// exportParcel is feature i of a grid of ~30 m squares around lon 11.5, lat 48.1, with four
// properties.
func exportParcel(i int) *spatial.Feature {
	x, y := 11.43+float64(i%316)*0.0004, 48.05+float64(i/316)*0.0003
	return &spatial.Feature{
		ID:       fmt.Sprintf("parcel.%d", i),
		Geometry: orb.Polygon{{{x, y}, {x + 0.0004, y}, {x + 0.0004, y + 0.00027}, {x, y + 0.00027}, {x, y}}},
		Properties: map[string]any{
			"name": fmt.Sprintf("parcel %d", i), "area": 900.5 + float64(i%7), "floors": float64(i % 5), "built": "2001-02-03",
		},
	}
}

var exportParcelColumns = []store.Column{
	{Name: "name", Property: "name", Type: store.TypeText},
	{Name: "area", Property: "area", Type: store.TypeDouble},
	{Name: "floors", Property: "floors", Type: store.TypeBigint},
	{Name: "built", Property: "built", Type: store.TypeDate},
}

// exportOpen opens an exported file for reading, as a plain SQLite database.
func exportOpen(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// exportDirFiles lists the names in dir.
func exportDirFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestExportGeometryType(t *testing.T) {
	pt, ls, pg := orb.Point{1, 2}, orb.LineString{{0, 0}, {1, 1}}, orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}
	for _, tc := range []struct {
		name  string
		geoms []orb.Geometry
		want  string
	}{
		{"no feature", nil, ""},
		{"only nil geometries", []orb.Geometry{nil, nil}, ""},
		{"points", []orb.Geometry{pt, pt}, "POINT"},
		{"points and a nil", []orb.Geometry{pt, nil, pt}, "POINT"},
		{"an empty point is a point", []orb.Geometry{pt, orb.Point{math.NaN(), math.NaN()}}, "POINT"},
		{"linestrings", []orb.Geometry{ls}, "LINESTRING"},
		{"polygons", []orb.Geometry{pg, pg}, "POLYGON"},
		{"ring and bound are written as polygons", []orb.Geometry{pg, pg[0], orb.Bound{Max: orb.Point{1, 1}}}, "POLYGON"},
		{"multipoints", []orb.Geometry{orb.MultiPoint{pt}}, "MULTIPOINT"},
		{"multilinestrings", []orb.Geometry{orb.MultiLineString{ls}}, "MULTILINESTRING"},
		{"multipolygons", []orb.Geometry{orb.MultiPolygon{pg}, orb.MultiPolygon{}}, "MULTIPOLYGON"},
		{"collections", []orb.Geometry{orb.Collection{pt, ls}}, "GEOMETRYCOLLECTION"},
		{"multi-geometries of two kinds are collections", []orb.Geometry{orb.MultiPoint{pt}, orb.MultiPolygon{pg}}, "GEOMETRYCOLLECTION"},
		{"a multi-geometry and a collection", []orb.Geometry{orb.MultiLineString{ls}, orb.Collection{pt}}, "GEOMETRYCOLLECTION"},
		{"point and multipoint", []orb.Geometry{pt, orb.MultiPoint{pt}}, "GEOMETRY"},
		{"polygon and multipolygon", []orb.Geometry{pg, orb.MultiPolygon{pg}}, "GEOMETRY"},
		{"point and line", []orb.Geometry{pt, ls}, "GEOMETRY"},
		{"mixed, then anything", []orb.Geometry{pt, ls, orb.MultiPoint{pt}, pt}, "GEOMETRY"},
		{"collection, then a point", []orb.Geometry{orb.Collection{pt}, pt}, "GEOMETRY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := ""
			for _, g := range tc.geoms {
				typ = exportGeometryType(typ, g)
			}
			if typ != tc.want {
				t.Fatalf("type of %v = %q, want %q", tc.geoms, typ, tc.want)
			}
		})
	}
}

func TestCheckExportLayer(t *testing.T) {
	col := func(names ...string) []store.Column {
		var cs []store.Column
		for _, n := range names {
			cs = append(cs, store.Column{Name: n})
		}
		return cs
	}
	for _, tc := range []struct {
		name    string
		layer   ExportLayer
		wantErr string // "" for none
	}{
		{"plain", ExportLayer{Name: "parcels", Columns: col("a", "B_2")}, ""},
		{"underscore first", ExportLayer{Name: "_x1"}, ""},
		{"empty name", ExportLayer{}, "not a table name"},
		{"schema", ExportLayer{Name: "public.parcels"}, "not a table name"},
		{"space", ExportLayer{Name: "my parcels"}, "not a table name"},
		{"quote", ExportLayer{Name: `a"b`}, "not a table name"},
		{"digit first", ExportLayer{Name: "1a"}, "not a table name"},
		{"too long", ExportLayer{Name: strings.Repeat("a", 64)}, "not a table name"},
		{"gpkg prefix", ExportLayer{Name: "GPKG_contents2"}, "reserved"},
		{"rtree prefix", ExportLayer{Name: "rtree_x_geom"}, "reserved"},
		{"sqlite prefix", ExportLayer{Name: "sqlite_x"}, "reserved"},
		{"column without name", ExportLayer{Name: "t", Columns: col("a", "")}, "column 2 has no name"},
		{"duplicate column", ExportLayer{Name: "t", Columns: col("a", "A")}, `column "A" is there twice`},
		{"fid column", ExportLayer{Name: "t", Columns: col("FID")}, `column "FID"`},
		{"geom column", ExportLayer{Name: "t", Columns: col("geom")}, `column "geom"`},
		{"odd column names are quoted, not refused", ExportLayer{Name: "t", Columns: col(`a "b"`, "é")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExportLayer(tc.layer)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestExportGeometries exports each geometry type and reads it back with the package's
// own decoder, in the layer's SRS, with the type and extent recorded.
func TestExportGeometries(t *testing.T) {
	pt, ls := orb.Point{11.5, 48.1}, orb.LineString{{11, 48}, {12, 49}}
	pg := orb.Polygon{{{11, 48}, {12, 48}, {12, 49}, {11, 48}}, {{11.2, 48.1}, {11.3, 48.1}, {11.3, 48.2}, {11.2, 48.1}}}
	for _, tc := range []struct {
		name     string
		srid     int
		geoms    []orb.Geometry
		want     []orb.Geometry // read back; defaults to geoms
		wantType string
		wantExt  *orb.Bound // nil: no extent
	}{
		{"no features", 4326, nil, nil, "GEOMETRY", nil},
		{"point", 4326, []orb.Geometry{pt, orb.Point{-1, -2}}, nil, "POINT", &orb.Bound{Min: orb.Point{-1, -2}, Max: pt}},
		{"linestring", 4326, []orb.Geometry{ls}, nil, "LINESTRING", &orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}},
		{"polygon with a hole", 4326, []orb.Geometry{pg}, nil, "POLYGON", &orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}},
		{"multipoint", 4326, []orb.Geometry{orb.MultiPoint{pt, {0, 0}}}, nil, "MULTIPOINT", &orb.Bound{Max: pt}},
		{"multilinestring", 4326, []orb.Geometry{orb.MultiLineString{ls, {{0, 0}, {1, 1}}}}, nil, "MULTILINESTRING", &orb.Bound{Max: orb.Point{12, 49}}},
		{"multipolygon", 4326, []orb.Geometry{orb.MultiPolygon{pg, {{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}}, nil, "MULTIPOLYGON", &orb.Bound{Max: orb.Point{12, 49}}},
		{"collection", 4326, []orb.Geometry{orb.Collection{pt, ls, pg}}, nil, "GEOMETRYCOLLECTION", &orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}},
		{"ring and bound come back as polygons", 4326, []orb.Geometry{pg[0], orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}},
			[]orb.Geometry{orb.Polygon{pg[0]}, orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}.ToPolygon()}, "POLYGON", &orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{12, 49}}},
		{"nil geometry is NULL", 4326, []orb.Geometry{nil, pt}, nil, "POINT", &orb.Bound{Min: pt, Max: pt}},
		{"only nil geometries", 4326, []orb.Geometry{nil}, nil, "GEOMETRY", nil},
		{"empty geometry has no extent", 4326, []orb.Geometry{orb.LineString{}}, nil, "LINESTRING", nil},
		{"mixed", 4326, []orb.Geometry{pt, ls, orb.MultiPolygon{pg}}, nil, "GEOMETRY", &orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}},
		{"undefined geographic", 0, []orb.Geometry{pt}, nil, "POINT", &orb.Bound{Min: pt, Max: pt}},
		{"projected", 25832, []orb.Geometry{orb.Point{690000, 5330000}}, nil, "POINT", &orb.Bound{Min: orb.Point{690000, 5330000}, Max: orb.Point{690000, 5330000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.gpkg")
			var fs []*spatial.Feature
			for i, g := range tc.geoms {
				fs = append(fs, &spatial.Feature{ID: fmt.Sprint(i), Geometry: g})
			}
			n, err := Export(context.Background(), path, ExportLayer{Name: "shapes", SRID: tc.srid}, exportSlice(fs))
			if err != nil || n != int64(len(fs)) {
				t.Fatalf("Export = %d, %v; want %d", n, err, len(fs))
			}
			db := exportOpen(t, path)
			want := tc.want
			if want == nil {
				want = tc.geoms
			}
			srs := srsID(tc.srid)
			rows, err := db.Query(`SELECT fid, geom FROM shapes ORDER BY fid`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			i := 0
			for ; rows.Next(); i++ {
				var fid int64
				var blob []byte
				if err := rows.Scan(&fid, &blob); err != nil {
					t.Fatal(err)
				}
				if fid != int64(i+1) {
					t.Errorf("row %d has fid %d", i, fid)
				}
				if want[i] == nil {
					if blob != nil {
						t.Errorf("feature %d: nil geometry stored as %x, not NULL", i, blob)
					}
					continue
				}
				g, gotSRS, err := decodeGeometry(blob)
				if err != nil || gotSRS != srs || !orb.Equal(g, want[i]) {
					t.Errorf("feature %d reads back as %v in %d (%v), want %v in %d", i, g, gotSRS, err, want[i], srs)
				}
			}
			if i != len(want) {
				t.Fatalf("%d rows, want %d", i, len(want))
			}
			exportCheckFile(t, db, "shapes", tc.wantType)
			var typ string
			var gcSRS, cSRS int32
			var minx, miny, maxx, maxy sql.NullFloat64
			if err := db.QueryRow(`SELECT geometry_type_name, g.srs_id, c.srs_id, min_x, min_y, max_x, max_y
				FROM gpkg_geometry_columns g JOIN gpkg_contents c USING (table_name) WHERE table_name = 'shapes'`).
				Scan(&typ, &gcSRS, &cSRS, &minx, &miny, &maxx, &maxy); err != nil {
				t.Fatal(err)
			}
			if typ != tc.wantType || gcSRS != srs || cSRS != srs {
				t.Errorf("registered as %s in %d / %d, want %s in %d", typ, gcSRS, cSRS, tc.wantType, srs)
			}
			got := (*orb.Bound)(nil)
			if minx.Valid {
				got = &orb.Bound{Min: orb.Point{minx.Float64, miny.Float64}, Max: orb.Point{maxx.Float64, maxy.Float64}}
			}
			if (got == nil) != (tc.wantExt == nil) || (got != nil && !got.Equal(*tc.wantExt)) {
				t.Errorf("extent %v, want %v", got, tc.wantExt)
			}
		})
	}
}

// exportCheckFile checks what every export must be: a GeoPackage 1.3 in rollback-journal
// mode (one file), intact after its schema was rewritten (declareGeometryType), its
// geometry column declared as registered, its R-tree consistent and holding every
// non-empty geometry, and nothing of geoflow's bookkeeping in it.
func exportCheckFile(t *testing.T, db *sql.DB, table, geomType string) {
	t.Helper()
	for _, c := range []struct {
		name, query string
		want        any
	}{
		{"application_id", "PRAGMA application_id", int64(0x47504B47)},
		{"user_version", "PRAGMA user_version", int64(10300)},
		{"journal mode", "PRAGMA journal_mode", "delete"},
		{"integrity", "PRAGMA integrity_check", "ok"},
		{"declared geometry type", "SELECT type FROM pragma_table_info(" + sqlString(table) + ") WHERE name = 'geom'", geomType},
		{"R-tree", "SELECT rtreecheck(" + sqlString("rtree_"+table+"_geom") + ")", "ok"},
		{"R-tree rows", "SELECT (SELECT count(*) FROM " + quote("rtree_"+table+"_geom") + ") = (SELECT count(*) FROM " + quote(table) +
			" WHERE geom IS NOT NULL AND NOT (substr(geom, 4, 1) = X'11' OR substr(geom, 4, 1) = X'13'))", int64(1)}, // flags: little-endian, empty
		{"no bookkeeping", "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'geoflow%'", int64(0)},
	} {
		var got any
		if err := db.QueryRow(c.query).Scan(&got); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if b, ok := got.([]byte); ok {
			got = string(b)
		}
		if got != c.want {
			t.Errorf("%s is %#v, want %#v", c.name, got, c.want)
		}
	}
}

// TestExportColumnTypes exports a value of each column type and reads back what SQLite
// holds: its storage class and value.
func TestExportColumnTypes(t *testing.T) {
	when := time.Date(2020, 5, 6, 7, 8, 9, 0, time.FixedZone("", 2*3600))
	for _, tc := range []struct {
		name      string
		typ       store.ColumnType
		declared  string // the column's declared type
		value     any    // nil: the property is missing
		wantClass string // SQLite's typeof
		want      any
	}{
		{"text", store.TypeText, "TEXT", "Straße 1", "text", "Straße 1"},
		{"text keeps spaces", store.TypeText, "TEXT", "  a ", "text", "  a "},
		{"empty text stays text", store.TypeText, "TEXT", "", "text", ""},
		{"number in a text column", store.TypeText, "TEXT", 1.5, "text", "1.5"},
		{"missing is NULL", store.TypeText, "TEXT", nil, "null", nil},
		{"bigint from float64", store.TypeBigint, "INTEGER", float64(3), "integer", int64(3)},
		{"bigint from int64", store.TypeBigint, "INTEGER", int64(1) << 60, "integer", int64(1) << 60},
		{"bigint from text", store.TypeBigint, "INTEGER", " 42 ", "integer", int64(42)},
		{"empty bigint is NULL", store.TypeBigint, "INTEGER", "", "null", nil},
		{"double", store.TypeDouble, "DOUBLE", 2.25, "real", 2.25},
		{"double from int64", store.TypeDouble, "DOUBLE", int64(7), "real", float64(7)},
		{"numeric from text", store.TypeNumeric, "DOUBLE", "12.50", "real", 12.5},
		{"boolean true is 1", store.TypeBoolean, "BOOLEAN", true, "integer", int64(1)},
		{"boolean false is 0", store.TypeBoolean, "BOOLEAN", false, "integer", int64(0)},
		{"boolean from text", store.TypeBoolean, "BOOLEAN", "yes", "integer", int64(1)},
		{"date", store.TypeDate, "DATE", "2001-02-03", "text", "2001-02-03"},
		{"date with spaces", store.TypeDate, "DATE", " 2001-02-03 ", "text", "2001-02-03"},
		{"date as a time", store.TypeDate, "DATE", "2001-02-03T23:30:00-05:00", "text", "2001-02-03"},
		{"date from a time", store.TypeDate, "DATE", when, "text", "2020-05-06"},
		{"timestamptz in UTC", store.TypeTimestamptz, "DATETIME", "2020-05-06T07:08:09+02:00", "text", "2020-05-06T05:08:09.000Z"},
		{"timestamptz from a time", store.TypeTimestamptz, "DATETIME", when, "text", "2020-05-06T05:08:09.000Z"},
		{"jsonb object", store.TypeJSONB, "TEXT", map[string]any{"a": []any{1.0, "b"}}, "text", `{"a":[1,"b"]}`},
		{"no type is text", "", "TEXT", true, "text", "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.gpkg")
			props := map[string]any{}
			if tc.value != nil {
				props["the value"] = tc.value
			}
			l := ExportLayer{Name: "t", SRID: 4326, Columns: []store.Column{{Name: "v", Property: "the value", Type: tc.typ}}}
			if _, err := Export(context.Background(), path, l, exportSlice([]*spatial.Feature{{Geometry: orb.Point{1, 2}, Properties: props}})); err != nil {
				t.Fatal(err)
			}
			db := exportOpen(t, path)
			var declared, class string
			if err := db.QueryRow(`SELECT type FROM pragma_table_info('t') WHERE name = 'v'`).Scan(&declared); err != nil {
				t.Fatal(err)
			}
			var got any
			// v || '' rather than v: the driver turns DATE and DATETIME columns into times.
			q := `SELECT typeof(v), v FROM t`
			if tc.wantClass == "text" {
				q = `SELECT typeof(v), v || '' FROM t`
			}
			if err := db.QueryRow(q).Scan(&class, &got); err != nil {
				t.Fatal(err)
			}
			if declared != tc.declared || class != tc.wantClass || got != tc.want {
				t.Fatalf("column %s holds %s %#v, want %s %s %#v", declared, class, got, tc.declared, tc.wantClass, tc.want)
			}
		})
	}
}

// TestExportRefusesValue: a value that does not fit its column fails the export with a
// *store.PropertyError naming the feature and property, and leaves no file.
func TestExportRefusesValue(t *testing.T) {
	for _, tc := range []struct {
		name        string
		typ         store.ColumnType
		good, value any
	}{
		{"word in an integer column", store.TypeBigint, 1.0, "three"},
		{"fraction in an integer column", store.TypeBigint, 1.0, 2.5},
		{"word in a number column", store.TypeDouble, 1.0, "many"},
		{"word in a boolean column", store.TypeBoolean, true, "perhaps"},
		{"word in a date column", store.TypeDate, "2001-02-03", "yesterday"},
		{"no such day", store.TypeDate, "2001-02-03", "2001-02-30"},
		{"word in a time column", store.TypeTimestamptz, "2001-02-03T04:05:06Z", "noon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := &exportSource{n: 20, make: func(i int) *spatial.Feature {
				f := exportParcel(i)
				f.Properties["v"] = tc.good
				if i == 12 {
					f.Properties["v"] = tc.value
				}
				return f
			}}
			l := ExportLayer{Name: "t", Columns: []store.Column{{Name: "col", Property: "v", Type: tc.typ}}}
			_, err := Export(context.Background(), filepath.Join(dir, "x.gpkg"), l, src)
			var pe *store.PropertyError
			if !errors.As(err, &pe) || pe.FeatureID != "parcel.12" || pe.Property != "v" || pe.Type != tc.typ {
				t.Fatalf("error %v, want a *store.PropertyError of parcel.12's v", err)
			}
			if !strings.Contains(err.Error(), "feature #12") {
				t.Errorf("error %q does not say which feature in the export", err)
			}
			if files := exportDirFiles(t, dir); len(files) > 0 {
				t.Fatalf("a failed export left %v", files)
			}
		})
	}
}

// TestExportAtomic: whatever fails, the target is as it was (absent, or the file there
// before) and no temporary file is left; a successful export replaces the old file.
func TestExportAtomic(t *testing.T) {
	errSource := errors.New("the server went away")
	for _, tc := range []struct {
		name    string
		n       int
		failAt  int  // the source fails at this feature, 0 never
		cancel  int  // ctx is cancelled when the source reaches this feature, 0 never
		before  bool // a file is at the path before
		wantErr error
	}{
		{"source fails in the first batch", 100, 50, 0, false, errSource},
		{"source fails after batches were committed", 3*exportBatch + 10, 2*exportBatch + 5, 0, false, errSource},
		{"source fails, existing file kept", 3*exportBatch + 10, 2*exportBatch + 5, 0, true, errSource},
		{"cancelled before the first feature", 100, 0, 1, false, context.Canceled},
		{"cancelled mid-way", 3*exportBatch + 10, 0, exportBatch + 3, false, context.Canceled},
		{"cancelled mid-way, existing file kept", 3*exportBatch + 10, 0, exportBatch + 3, true, context.Canceled},
		{"cancelled as the last feature is read", 500, 0, 500, true, context.Canceled},
		{"success replaces the file", 500, 0, 0, true, nil},
		{"success creates the file", 500, 0, 0, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.gpkg")
			old := []byte("the previous export")
			if tc.before {
				if err := os.WriteFile(path, old, 0o640); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src := &exportSource{n: tc.n, make: exportParcel, fail: func(i int) error {
				if i == tc.cancel {
					cancel()
				}
				if tc.failAt > 0 && i >= tc.failAt {
					return errSource
				}
				return nil
			}}
			n, err := Export(ctx, path, ExportLayer{Name: "parcels", SRID: 4326, Columns: exportParcelColumns}, src)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Export = %d, %v; want %v", n, err, tc.wantErr)
			}
			files := exportDirFiles(t, dir)
			if tc.wantErr == nil {
				if n != int64(tc.n) || !slices.Equal(files, []string{"out.gpkg"}) {
					t.Fatalf("wrote %d and left %v, want %d in out.gpkg alone", n, files, tc.n)
				}
				var count int64
				if err := exportOpen(t, path).QueryRow(`SELECT count(*) FROM parcels`).Scan(&count); err != nil || count != int64(tc.n) {
					t.Fatalf("the new file has %d features (%v), want %d", count, err, tc.n)
				}
				wantMode := os.FileMode(0o644)
				if tc.before {
					wantMode = 0o640 // the replaced file's
				}
				if fi, err := os.Stat(path); err != nil {
					t.Error(err)
				} else if fi.Mode().Perm() != wantMode {
					t.Errorf("the new file's mode is %v, want %v", fi.Mode().Perm(), wantMode)
				}
				return
			}
			if n != 0 {
				t.Errorf("a failed export says it wrote %d", n)
			}
			if !tc.before {
				if len(files) > 0 {
					t.Fatalf("a failed export left %v", files)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, old) || !slices.Equal(files, []string{"out.gpkg"}) {
				t.Fatalf("after a failed export the directory holds %v and the file %q (%v), want the old file alone", files, got, err)
			}
		})
	}
}

// TestExportRefusesPath: a path that cannot be written fails before any feature is read.
func TestExportRefusesPath(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path, want string
	}{
		{"a directory", dir, "is a directory"},
		{"a missing directory", filepath.Join(dir, "nope", "x.gpkg"), "creating its temporary file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &exportSource{n: 1, make: exportParcel}
			_, err := Export(context.Background(), tc.path, ExportLayer{Name: "t"}, src)
			if err == nil || !strings.Contains(err.Error(), tc.want) || src.i != 0 {
				t.Fatalf("error %v after %d features, want one saying %q before any", err, src.i, tc.want)
			}
		})
	}
}

// exportGDAL finds ogrinfo, ogr2ogr and GDAL's GeoPackage validator, as the OGR tests in
// internal/devserver/wfsserver do: without them the GDAL checks skip, unless
// GEOFLOW_REQUIRE_GDAL=1 makes that a failure.
func exportGDAL(t *testing.T) (validator string) {
	t.Helper()
	if testing.Short() && os.Getenv("GEOFLOW_REQUIRE_GDAL") != "1" {
		t.Skip("GDAL checks take a while; skipped in -short mode")
	}
	validator = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py"
	missing := func(what string, err error) {
		if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but %s is missing: %v", what, err)
		}
		t.Skipf("%s missing (GDAL is only for checks): %v", what, err)
	}
	for _, tool := range []string{"ogrinfo", "ogr2ogr", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(tool, err)
		}
	}
	if _, err := os.Stat(validator); err != nil {
		missing("validate_gpkg.py", err)
	}
	return validator
}

// exportTool runs a GDAL tool and returns its output, failing the test when it fails.
func exportTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// exportMixed is a layer of every column type, and features of every geometry type
// (one without a geometry) with all, some or none of the properties.
func exportMixed() (ExportLayer, []*spatial.Feature) {
	l := ExportLayer{Name: "mixed", SRID: 4326, Description: "a bit of everything", Columns: []store.Column{
		{Name: "label", Property: "label", Type: store.TypeText},
		{Name: "count", Property: "count", Type: store.TypeBigint},
		{Name: "ratio", Property: "ratio", Type: store.TypeDouble},
		{Name: "price", Property: "price", Type: store.TypeNumeric},
		{Name: "open", Property: "open", Type: store.TypeBoolean},
		{Name: "day", Property: "day", Type: store.TypeDate},
		{Name: "seen", Property: "seen", Type: store.TypeTimestamptz},
		{Name: "extra", Property: "extra", Type: store.TypeJSONB},
		{Name: "Odd Name", Property: "odd"},
	}}
	pg := orb.Polygon{{{11, 48}, {11.1, 48}, {11.1, 48.1}, {11, 48}}}
	geoms := []orb.Geometry{
		orb.Point{11.5, 48.1}, orb.LineString{{11, 48}, {11.2, 48.3}}, pg, orb.MultiPoint{{11, 48}, {11.3, 48.4}},
		orb.MultiLineString{{{11, 48}, {12, 49.5}}}, orb.MultiPolygon{pg}, orb.Collection{orb.Point{10.5, 47.5}}, nil,
	}
	var fs []*spatial.Feature
	for i, g := range geoms {
		p := map[string]any{"label": fmt.Sprintf("f%d", i), "count": float64(i), "ratio": float64(i) / 4, "price": "10.25",
			"open": i%2 == 0, "day": "2001-02-03", "seen": "2020-05-06T07:08:09+02:00", "extra": map[string]any{"i": i}, "odd": "x"}
		if i == 3 {
			p = map[string]any{"label": "sparse"}
		}
		fs = append(fs, &spatial.Feature{ID: fmt.Sprint(i), Geometry: g, Properties: p})
	}
	return l, fs
}

// TestExportGDAL has GDAL judge exports: its validator with extra checks and warnings as
// errors, ogrinfo's summary (count, extent, fields), and the values read back as GeoJSON.
func TestExportGDAL(t *testing.T) {
	validator := exportGDAL(t)
	mixedLayer, mixed := exportMixed()
	for _, tc := range []struct {
		name     string
		layer    ExportLayer
		features []*spatial.Feature
		summary  []string // what ogrinfo -so -al says
	}{
		{"every column and geometry type", mixedLayer, mixed, []string{"Layer name: mixed", "Geometry: Unknown (any)",
			"Feature Count: 8", "Extent: (10.500000, 47.500000) - (12.000000, 49.500000)", `ID["EPSG",4326]`, "FID Column = fid",
			"label: String", "count: Integer64", "ratio: Real", "price: Real", "open: Integer(Boolean)", "day: Date",
			"seen: DateTime", "extra: String", "Odd Name: String", "DESCRIPTION=a bit of everything"}},
		{"parcels", ExportLayer{Name: "parcels", SRID: 4326, Columns: exportParcelColumns}, exportFeatures(1000, exportParcel),
			[]string{"DESCRIPTION=exported by geoflow", "Geometry: Polygon", "Feature Count: 1000", "Extent: (11.430000, 48.050000) - (11.556400, 48.051170)",
				"name: String", "area: Real", "floors: Integer64", "built: Date"}},
		{"multi-geometries of two kinds", ExportLayer{Name: "multis", SRID: 4326}, []*spatial.Feature{
			{Geometry: orb.MultiPoint{{1, 2}}}, {Geometry: orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}}},
			[]string{"Geometry: Geometry Collection", "Feature Count: 2", "Extent: (0.000000, 0.000000) - (1.000000, 2.000000)"}},
		{"empty", ExportLayer{Name: "nothing", SRID: 4326, Columns: exportParcelColumns}, nil,
			[]string{"Geometry: Unknown (any)", "Feature Count: 0", "name: String"}},
		{"undefined geographic", ExportLayer{Name: "somewhere", SRID: 0}, exportFeatures(10, exportParcel),
			[]string{"Geometry: Polygon", "Feature Count: 10"}},
		{"known projected CRS", ExportLayer{Name: "utm", SRID: 25832}, []*spatial.Feature{{Geometry: orb.Point{690000, 5330000}}},
			[]string{"Geometry: Point", "Feature Count: 1", `ID["EPSG",25832]`, "Extent: (690000.000000, 5330000.000000) - (690000.000000, 5330000.000000)"}},
		{"CRS the package has no WKT for", ExportLayer{Name: "finland", SRID: 3067}, []*spatial.Feature{{Geometry: orb.Point{400000, 7000000}}},
			[]string{"Feature Count: 1", "ETRS89 / TM35FIN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.layer.Name+".gpkg")
			n, err := Export(context.Background(), path, tc.layer, exportSlice(tc.features))
			if err != nil || n != int64(len(tc.features)) {
				t.Fatalf("Export = %d, %v; want %d", n, err, len(tc.features))
			}
			exportTool(t, "python3", validator, "--extra", "--warning-as-error", path)
			out := exportTool(t, "ogrinfo", "-so", "-al", path)
			for _, w := range tc.summary {
				if !strings.Contains(out, w) {
					t.Errorf("ogrinfo -so -al does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "geoflow") && !strings.Contains(out, "exported by geoflow") {
				t.Errorf("geoflow's bookkeeping is in the export:\n%s", out)
			}
		})
	}
	t.Run("values", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mixed.gpkg")
		if _, err := Export(context.Background(), path, mixedLayer, exportSlice(mixed)); err != nil {
			t.Fatal(err)
		}
		var fc struct {
			Features []struct {
				Geometry   json.RawMessage
				Properties map[string]any
			}
		}
		if err := json.Unmarshal([]byte(exportTool(t, "ogr2ogr", "-f", "GeoJSON", "/vsistdout/", path)), &fc); err != nil {
			t.Fatal(err)
		}
		if len(fc.Features) != len(mixed) {
			t.Fatalf("GDAL reads %d features, want %d", len(fc.Features), len(mixed))
		}
		want := map[string]any{"label": "f2", "count": 2.0, "ratio": 0.5, "price": 10.25, "open": true, "day": "2001-02-03",
			"seen": "2020-05-06T05:08:09Z", "extra": map[string]any{"i": 2}, "Odd Name": "x"}
		if got := fc.Features[2].Properties; !exportEqualJSON(got, want) {
			t.Errorf("GDAL reads feature 2's properties as %v, want %v", got, want)
		}
		if got := fc.Features[3].Properties; got["label"] != "sparse" || got["count"] != nil || got["open"] != nil {
			t.Errorf("GDAL reads the sparse feature's properties as %v", got)
		}
		if g := string(fc.Features[7].Geometry); g != "null" {
			t.Errorf("GDAL reads the feature without geometry as %s", g)
		}
		if g := string(fc.Features[6].Geometry); !strings.Contains(g, "GeometryCollection") {
			t.Errorf("GDAL reads the collection as %s", g)
		}
	})
}

func exportFeatures(n int, mk func(int) *spatial.Feature) []*spatial.Feature {
	fs := make([]*spatial.Feature, n)
	for i := range fs {
		fs[i] = mk(i + 1)
	}
	return fs
}

func exportEqualJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestExportMemory exports 200,000 features made as they are read and samples the heap
// meanwhile: what the export holds must not grow with the features, except for the
// R-tree's 24 bytes each while it is packed.
func TestExportMemory(t *testing.T) {
	const n = 200000
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak, streamPeak atomic.Uint64
	var streaming atomic.Bool
	streaming.Store(true)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample the heap every 2 ms
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
				if streaming.Load() && m.HeapAlloc > streamPeak.Load() {
					streamPeak.Store(m.HeapAlloc)
				}
			}
		}
	}()
	src := &exportSource{n: n, make: exportParcel, fail: func(i int) error {
		if i == n {
			streaming.Store(false)
		}
		return nil
	}}
	start := time.Now()
	path := filepath.Join(t.TempDir(), "big.gpkg")
	got, err := Export(context.Background(), path, ExportLayer{Name: "parcels", SRID: 4326, Columns: exportParcelColumns}, src)
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil || got != n {
		t.Fatalf("Export = %d, %v; want %d", got, err, n)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	fi, _ := os.Stat(path)
	growth := func(v uint64) float64 { return (float64(v) - float64(base.HeapAlloc)) / (1 << 20) }
	t.Logf("%d features in %v, %.1f MB file; heap %.1f MiB before, peak growth %.1f MiB while streaming, %.1f MiB overall; %.0f bytes allocated per feature",
		n, took.Round(time.Millisecond), float64(fi.Size())/1e6, float64(base.HeapAlloc)/(1<<20), growth(streamPeak.Load()), growth(peak.Load()),
		float64(after.TotalAlloc-base.TotalAlloc)/n)
	// Bounds far above what was measured (see the log), far below what holding the
	// features would take (over 100 MiB of features and rows).
	if g := growth(streamPeak.Load()); g > 32 {
		t.Errorf("the heap grew by %.1f MiB while streaming", g)
	}
	if g := growth(peak.Load()); g > 64 {
		t.Errorf("the heap grew by %.1f MiB", g)
	}
}

// BenchmarkExport exports 100,000 parcels (a 5-point polygon and four properties each):
// "features" from features already made, "geojson" read from a GeoJSON file of them
// with spatial/geojson, as ogr2ogr -f GPKG converts that file. The file is written to
// GEOFLOW_EXPORT_GEOJSON when set, for that comparison.
func BenchmarkExport(b *testing.B) {
	const n = 100000
	fs := exportFeatures(n, exportParcel)
	gj := exportEnvOr("GEOFLOW_EXPORT_GEOJSON", filepath.Join(b.TempDir(), "parcels.geojson"))
	exportGeoJSON(b, gj, fs)
	l := ExportLayer{Name: "parcels", SRID: 4326, Columns: exportParcelColumns}
	for _, tc := range []struct {
		name string
		src  func() store.FeatureSource
	}{
		{"features", func() store.FeatureSource { return exportSlice(fs) }},
		{"geojson", func() store.FeatureSource {
			f, err := os.Open(gj)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { f.Close() })
			return geojson.NewReader(f, geojson.Options{})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "parcels.gpkg")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				got, err := Export(b.Context(), path, l, tc.src())
				if err != nil || got != n {
					b.Fatalf("Export = %d, %v", got, err)
				}
			}
			runtime.ReadMemStats(&after)
			features := float64(b.N) * n
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/features, "ns/feature")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/features, "allocs/feature")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/features, "B/feature")
			if fi, err := os.Stat(path); err == nil {
				b.ReportMetric(float64(fi.Size())/n, "file-B/feature")
			}
		})
	}
}

func exportEnvOr(env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}

func exportGeoJSON(b *testing.B, path string, fs []*spatial.Feature) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := geojson.NewCollectionWriter(f)
	for _, ft := range fs {
		if err := w.Feature(ft.ID, ft.Geometry, ft.Properties); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(nil); err != nil {
		b.Fatal(err)
	}
}

// TestExportAsIs: every value exportValue takes a short way with is what columnValue
// makes of it.
func TestExportAsIs(t *testing.T) {
	tests := []struct {
		name string
		v    any
		typ  store.ColumnType
	}{
		{"text", "a b ", store.TypeText},
		{"empty text", "", store.TypeText},
		{"untyped", "x", ""},
		{"date", "2024-05-01", store.TypeDate},
		{"not a date", "2024-13-01", store.TypeDate},
		{"a time", "2024-05-01T10:00:00Z", store.TypeTimestamptz},
		{"a time in the store's form", "2024-05-01T10:00:00.120Z", store.TypeTimestamptz},
		{"a time with a zone", "2024-05-01T10:00:00.123456+02:00", store.TypeTimestamptz},
		{"a time of year 1", "0001-01-01T00:00:00Z", store.TypeTimestamptz},
		{"a time of year 12345", "12345-01-01T00:00:00Z", store.TypeTimestamptz},
		{"a leap day", "2024-02-29", store.TypeDate},
		{"no leap day", "2023-02-29", store.TypeDate},
		{"no leap day in 1900", "1900-02-29T00:00:00Z", store.TypeTimestamptz},
		{"a leap day in 2000", "2000-02-29T23:59:59Z", store.TypeTimestamptz},
		{"day 31 of April", "2024-04-31", store.TypeDate},
		{"month 0", "2024-00-10", store.TypeDate},
		{"day 0", "2024-01-00T00:00:00Z", store.TypeTimestamptz},
		{"hour 24", "2024-01-01T24:00:00Z", store.TypeTimestamptz},
		{"second 60", "2024-01-01T23:59:60Z", store.TypeTimestamptz},
		{"a lowercase z", "2024-01-01T10:00:00z", store.TypeTimestamptz},
		{"a space for the T", "2024-01-01 10:00:00Z", store.TypeTimestamptz},
		{"a sign in the year", "+024-01-01T10:00:00Z", store.TypeTimestamptz},
		{"year 0", "0000-01-01T00:00:00Z", store.TypeTimestamptz},
		{"a date as a time", "2024-05-01", store.TypeTimestamptz},
		{"a time as a date", "2024-05-01T10:00:00Z", store.TypeDate},
		{"a bigint", int64(-42), store.TypeBigint},
		{"a bigint as double", int64(1<<53 + 1), store.TypeDouble},
		{"a bigint as numeric", int64(7), store.TypeNumeric},
		{"a double", 2.25, store.TypeDouble},
		{"a double NaN", math.NaN(), store.TypeDouble},
		{"a double infinite", math.Inf(-1), store.TypeNumeric},
		{"a whole double as bigint", 3.0, store.TypeBigint},
		{"a double too large for a bigint", 1e19, store.TypeBigint},
		{"a fraction as bigint", 3.5, store.TypeBigint},
		{"a bool", true, store.TypeBoolean},
		{"a bool as text", false, store.TypeText},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := columnValue(tc.v, tc.typ)
			got, ok := exportAsIs(tc.v, tc.typ)
			if !ok {
				return // columnValue's way
			}
			if werr != nil {
				t.Fatalf("%#v as %s: %#v, columnValue fails: %v", tc.v, tc.typ, got, werr)
			}
			if g, ok := got.(float64); ok && math.IsNaN(g) {
				if w, ok := want.(float64); ok && math.IsNaN(w) {
					return
				}
			}
			if got != want {
				t.Errorf("%#v as %s: %#v, columnValue makes %#v", tc.v, tc.typ, got, want)
			}
		})
	}
}

// TestAppendTS: the store's time text is Format's, for every year.
func TestAppendTS(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 999999999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 1e6, time.FixedZone("x", 3600)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 3, 4, 5, 6, 7, 89e6, time.UTC),
	} {
		if got, want := ts(tm), tm.UTC().Format(timeFormat); got != want {
			t.Errorf("ts(%v) = %q, want %q", tm, got, want)
		}
	}
}
