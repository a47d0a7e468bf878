package flatgeobuf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

func TestAppendProperty(t *testing.T) {
	le := binary.LittleEndian
	text := func(s string) []byte { return append(le.AppendUint32([]byte{3, 0}, uint32(len(s))), s...) }
	long := func(n int64) []byte { return le.AppendUint64([]byte{3, 0}, uint64(n)) }
	double := func(f float64) []byte { return le.AppendUint64([]byte{3, 0}, math.Float64bits(f)) }
	for _, tc := range []struct {
		name    string
		typ     store.ColumnType
		v       any
		want    []byte // nil: nothing (NULL)
		wantErr bool
	}{
		{"text", store.TypeText, "héllo", text("héllo"), false},
		{"empty text stays", store.TypeText, "", text(""), false},
		{"number as text", store.TypeText, 1.5, text("1.5"), false},
		{"bigint from a JSON number", store.TypeBigint, float64(42), long(42), false},
		{"bigint from int64", store.TypeBigint, int64(-7), long(-7), false},
		{"bigint from text", store.TypeBigint, " 12 ", long(12), false},
		{"bigint refuses a fraction", store.TypeBigint, 1.5, nil, true},
		{"bigint refuses a word", store.TypeBigint, "many", nil, true},
		{"bigint empty text is NULL", store.TypeBigint, "", nil, false},
		{"double", store.TypeDouble, 0.25, double(0.25), false},
		{"numeric from text", store.TypeNumeric, "10.25", double(10.25), false},
		{"double from int", store.TypeDouble, 3, double(3), false},
		{"boolean", store.TypeBoolean, true, []byte{3, 0, 1}, false},
		{"boolean from text", store.TypeBoolean, "no", []byte{3, 0, 0}, false},
		{"boolean refuses", store.TypeBoolean, "maybe", nil, true},
		{"date", store.TypeDate, "2001-02-03", text("2001-02-03"), false},
		{"date with slashes", store.TypeDate, "2001/02/03", text("2001-02-03"), false},
		{"timestamp to UTC", store.TypeTimestamptz, "2020-05-06T07:08:09+02:00", text("2020-05-06T05:08:09Z"), false},
		{"timestamp without zone is UTC", store.TypeTimestamptz, "2020-05-06 07:08:09", text("2020-05-06T07:08:09Z"), false},
		{"time.Time", store.TypeTimestamptz, time.Date(2020, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), text("2020-01-02T02:04:05Z"), false},
		{"not a date", store.TypeDate, "soon", nil, true},
		{"json object", store.TypeJSONB, map[string]any{"a": 1}, text(`{"a":1}`), false},
		{"json text", store.TypeJSONB, `[1, 2]`, text(`[1, 2]`), false},
		{"json refuses bad text", store.TypeJSONB, `{`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := []byte{9}
			got, err := appendProperty(buf, 3, columnTypeFor(tc.typ), tc.v)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if got[0] != 9 {
				t.Fatal("what was in the buffer changed")
			}
			if !bytes.Equal(got[1:], tc.want) {
				t.Fatalf("appended % x, want % x", got[1:], tc.want)
			}
		})
	}
}

func TestLayerType(t *testing.T) {
	pt, ls, pg := orb.Point{1, 2}, orb.LineString{{0, 0}, {1, 1}}, orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}
	for _, tc := range []struct {
		name  string
		geoms []orb.Geometry
		want  geometryType
	}{
		{"no feature", nil, typeUnknown},
		{"only nil geometries", []orb.Geometry{nil, nil}, typeUnknown},
		{"points", []orb.Geometry{pt, nil, pt}, typePoint},
		{"an empty linestring is a linestring", []orb.Geometry{ls, orb.LineString{}}, typeLineString},
		{"ring and bound are polygons", []orb.Geometry{pg, pg[0], orb.Bound{Max: orb.Point{1, 1}}}, typePolygon},
		{"multipolygons", []orb.Geometry{orb.MultiPolygon{pg}}, typeMultiPolygon},
		{"collections", []orb.Geometry{orb.Collection{pt}}, typeGeometryCollection},
		{"point and multipoint are mixed", []orb.Geometry{pt, orb.MultiPoint{pt}}, typeUnknown},
		{"mixed, then points again", []orb.Geometry{pt, ls, pt}, typeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, seen := typeUnknown, false
			for _, g := range tc.geoms {
				typ, seen = layerType(typ, seen, g)
			}
			if typ != tc.want {
				t.Fatalf("type %d, want %d", typ, tc.want)
			}
		})
	}
}
