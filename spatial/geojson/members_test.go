package geojson

import (
	"errors"
	"reflect"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

func TestMemberFields(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		feature  string
		geometry string
	}{
		{name: "exact", key: "type", feature: "type", geometry: "type"},
		{name: "upper case", key: "GEOMETRY", feature: "geometry"},
		{name: "mixed case", key: "Coordinates", geometry: "coordinates"},
		{name: "long s folds to s", key: "propertieſ", feature: "properties"},
		{name: "a key that folds but is no member", key: "\u212aey"},
		{name: "dotless i does not fold", key: "geometr\u0131"},
		{name: "geometries of a geometry only", key: "geometries", geometry: "geometries"},
		{name: "id of a feature only", key: "ID", feature: "id"},
		{name: "prefix", key: "propertie"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := featureField([]byte(tt.key)); got != tt.feature {
				t.Errorf("featureField(%q) = %q, want %q", tt.key, got, tt.feature)
			}
			if got := geometryField([]byte(tt.key)); got != tt.geometry {
				t.Errorf("geometryField(%q) = %q, want %q", tt.key, got, tt.geometry)
			}
		})
	}
}

func TestGeomType(t *testing.T) {
	tests := []struct {
		name string
		in   string
		kind geomKind
		typ  string
	}{
		{name: "point", in: "Point", kind: kindPoint, typ: "Point"},
		{name: "collection", in: "GeometryCollection", kind: kindCollection, typ: "GeometryCollection"},
		{name: "case matters", in: "point", kind: kindOther, typ: "point"},
		{name: "unsupported keeps its name", in: "CircularString", kind: kindOther, typ: "CircularString"},
		{name: "empty string is no type", in: "", kind: kindNone, typ: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, typ := geomType([]byte(tt.in))
			if kind != tt.kind || typ != tt.typ {
				t.Errorf("geomType(%q) = %d, %q; want %d, %q", tt.in, kind, typ, tt.kind, tt.typ)
			}
		})
	}
}

func TestGeomTypeRefusal(t *testing.T) {
	terr := typeErr("number", geomMemberTarget("type"))
	tests := []struct {
		name string
		gm   geomMembers
		want string // "" for none
	}{
		{name: "a wrong JSON type first", gm: geomMembers{terr: terr, kind: kindOther, typ: "Circle"},
			want: "geojson geometry: json: cannot unmarshal number into Go struct field rawGeometry.type of type string"},
		{name: "no type", gm: geomMembers{}, want: "geojson geometry without a type"},
		{name: "unsupported type", gm: geomMembers{kind: kindOther, typ: "Circle"}, want: `geojson geometry type "Circle" not supported`},
		{name: "a collection", gm: geomMembers{kind: kindCollection}},
		{name: "a polygon", gm: geomMembers{kind: kindPolygon}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.gm.typeRefusal()
			if got := errString(err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := geomMemberTarget("geometries"); got != "Go struct field rawGeometry.geometries of type []json.RawMessage" {
		t.Errorf("the target of geometries: %q", got)
	}
}

func TestCollection(t *testing.T) {
	pt := orb.Point{1, 2}
	refused := errors.New("geojson Point coordinates: missing")
	tests := []struct {
		name    string
		members []geomResult
		level   int
		want    orb.Geometry
		err     string
	}{
		{name: "empty", members: []geomResult{}, want: orb.Collection{}},
		{name: "members in order", members: []geomResult{{g: pt}, {g: orb.LineString{pt, pt}}}, want: orb.Collection{pt, orb.LineString{pt, pt}}},
		{name: "the first refused member refuses it", members: []geomResult{{g: pt}, {err: refused}, {g: nil}}, err: refused.Error()},
		{name: "a null member", members: []geomResult{{g: nil}, {err: refused}}, err: "geojson geometry: null member of a GeometryCollection"},
		{name: "nested as deep as allowed", members: []geomResult{{g: pt}}, level: maxCollectionDepth - 1, want: orb.Collection{pt}},
		{name: "nested too deep", members: []geomResult{{g: pt}}, level: maxCollectionDepth, err: "geojson geometry: GeometryCollection nested too deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := collection(tt.members, tt.level)
			if got := errString(err); got != tt.err {
				t.Fatalf("error %q, want %q", got, tt.err)
			}
			if !reflect.DeepEqual(g, tt.want) {
				t.Errorf("got %#v, want %#v", g, tt.want)
			}
		})
	}
}

func TestFeatureMembersFeature(t *testing.T) {
	terr := typeErr("string", "Go struct field rawFeature.properties of type map[string]interface {}")
	gerr := errors.New("geojson geometry without a type")
	tests := []struct {
		name string
		fm   featureMembers
		want *spatial.Feature
		err  string
	}{
		{name: "no members", want: &spatial.Feature{Properties: map[string]any{}}},
		{name: "members", fm: featureMembers{id: "a.1", g: orb.Point{1, 2}, props: map[string]any{"n": 1.0}},
			want: &spatial.Feature{ID: "a.1", Geometry: orb.Point{1, 2}, Properties: map[string]any{"n": 1.0}}},
		{name: "a wrong JSON type before the geometry", fm: featureMembers{id: "a.2", terr: terr, gerr: gerr},
			err: `refused "a.2" #7: geojson: json: cannot unmarshal string into Go struct field rawFeature.properties of type map[string]interface {}`},
		{name: "a refused geometry", fm: featureMembers{id: "a.3", gerr: gerr, props: map[string]any{}},
			err: `refused "a.3" #7: geojson geometry without a type`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.fm.feature(7, nil)
			if got := errString(err); err != nil && errClass(err) != tt.err || err == nil && tt.err != "" {
				t.Fatalf("error %s (%s), want %s", errClass(err), got, tt.err)
			}
			if !reflect.DeepEqual(f, tt.want) {
				t.Errorf("got %#v, want %#v", f, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
