package esrijson_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/esrijson"
)

func read(t *testing.T, body string, opts esrijson.Options) ([]*spatial.Feature, *esrijson.Reader, error) {
	t.Helper()
	r := esrijson.NewReader(strings.NewReader(body), opts)
	var out []*spatial.Feature
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		var fe *spatial.FeatureError
		if errors.As(err, &fe) {
			continue
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, f)
	}
}

func TestGeometry(t *testing.T) {
	square := func(x0, y0, x1, y1 float64, cw bool) string {
		if cw { // clockwise, y up: as Esri writes exteriors
			return "[[" + f(x0) + "," + f(y0) + "],[" + f(x0) + "," + f(y1) + "],[" + f(x1) + "," + f(y1) + "],[" + f(x1) + "," + f(y0) + "],[" + f(x0) + "," + f(y0) + "]]"
		}
		return "[[" + f(x0) + "," + f(y0) + "],[" + f(x1) + "," + f(y0) + "],[" + f(x1) + "," + f(y1) + "],[" + f(x0) + "," + f(y1) + "],[" + f(x0) + "," + f(y0) + "]]"
	}
	tests := []struct {
		name     string
		geometry string
		want     string // the orb type, and for polygons rings per part
		area     float64
	}{
		{name: "point", geometry: `{"x":11.5,"y":48.1}`, want: "Point"},
		{name: "point with z and m", geometry: `{"x":11.5,"y":48.1,"z":520,"m":3}`, want: "Point"},
		{name: "empty point NaN", geometry: `{"x":"NaN","y":"NaN"}`, want: "<nil>"},
		{name: "empty point null", geometry: `{"x":null,"y":null}`, want: "<nil>"},
		{name: "multipoint", geometry: `{"points":[[1,2],[3,4,5]]}`, want: "MultiPoint"},
		{name: "polyline one path", geometry: `{"paths":[[[0,0],[1,1]]]}`, want: "LineString"},
		{name: "polyline two paths", geometry: `{"paths":[[[0,0],[1,1]],[[2,2],[3,3]]],"hasZ":false}`, want: "MultiLineString"},
		{name: "polygon with a hole", geometry: `{"rings":[` + square(0, 0, 10, 10, true) + `,` + square(2, 2, 8, 8, false) + `]}`, want: "Polygon[2]", area: 64},
		{name: "multipart with a hole in the first part", geometry: `{"rings":[` + square(0, 0, 10, 10, true) + `,` + square(2, 2, 8, 8, false) + `,` + square(20, 0, 25, 5, true) + `]}`,
			want: "MultiPolygon[2 1]", area: 64 + 25},
		{name: "hole listed before its exterior", geometry: `{"rings":[` + square(2, 2, 8, 8, false) + `,` + square(20, 0, 25, 5, true) + `,` + square(0, 0, 10, 10, true) + `]}`,
			want: "MultiPolygon[1 2]", area: 25 + 64},
		{name: "nested: an island in a lake", geometry: `{"rings":[` + square(0, 0, 10, 10, true) + `,` + square(2, 2, 8, 8, false) + `,` + square(4, 4, 6, 6, true) + `]}`,
			want: "MultiPolygon[2 1]", area: 64 + 4},
		{name: "every ring counter-clockwise (wound backwards)", geometry: `{"rings":[` + square(0, 0, 10, 10, false) + `,` + square(20, 0, 25, 5, false) + `]}`,
			want: "MultiPolygon[1 1]", area: 125},
		{name: "wound backwards, with a hole", geometry: `{"rings":[` + square(0, 0, 10, 10, false) + `,` + square(2, 2, 4, 4, true) + `]}`,
			want: "Polygon[2]", area: 96},
		{name: "every ring counter-clockwise, with a hole", geometry: `{"rings":[` + square(0, 0, 10, 10, false) + `,` + square(2, 2, 4, 4, false) + `]}`,
			want: "Polygon[2]", area: 96},
		{name: "wound backwards: an island in a lake", geometry: `{"rings":[` + square(0, 0, 10, 10, false) + `,` + square(2, 2, 8, 8, true) + `,` + square(4, 4, 6, 6, false) + `]}`,
			want: "MultiPolygon[2 1]", area: 64 + 4},
		{name: "a counter-clockwise ring outside every exterior", geometry: `{"rings":[` + square(0, 0, 10, 10, true) + `,` + square(20, 0, 25, 5, false) + `]}`,
			want: "MultiPolygon[1 1]", area: 125},
		{name: "envelope", geometry: `{"xmin":0,"ymin":0,"xmax":2,"ymax":3}`, want: "Polygon[1]", area: 6},
		{name: "null", geometry: `null`, want: "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := esrijson.Geometry([]byte(tt.geometry), 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(g); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			if tt.area > 0 {
				if a := planar.Area(g); a != tt.area {
					t.Errorf("area %g, want %g", a, tt.area)
				}
				// GeoJSON's winding: exteriors counter-clockwise, holes clockwise.
				for _, p := range polygons(g) {
					for i, r := range p {
						if want := map[bool]orb.Orientation{true: orb.CCW, false: orb.CW}[i == 0]; r.Orientation() != want {
							t.Errorf("ring %d wound %v", i, r.Orientation())
						}
					}
				}
			}
		})
	}
	for _, bad := range []string{`{"curveRings":[[[0,0],{"c":[[1,1],[0.5,0.5]]}]]}`, `{"rings":[[[0,0],[1]]]}`, `{"paths":[[[0,0]]]}`,
		`{"rings":[[[0,0],[0,1],[1,1],[1,0]]]}`, `{"rings":[[[0,0],[0,1],[0,0]]]}`, `{"x":"a","y":1}`} {
		if _, err := esrijson.Geometry([]byte(bad), 0); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := esrijson.Geometry([]byte(`{"points":[[1,2],[3,4],[5,6]]}`), 2); !errors.Is(err, spatial.ErrTooLarge) {
		t.Errorf("3 vertices past a limit of 2: %v", err)
	}
}

func f(x float64) string { return strconvF(x) }

func polygons(g orb.Geometry) []orb.Polygon {
	switch v := g.(type) {
	case orb.Polygon:
		return []orb.Polygon{v}
	case orb.MultiPolygon:
		return v
	}
	return nil
}

func describe(g orb.Geometry) string {
	switch v := g.(type) {
	case nil:
		return "<nil>"
	case orb.Polygon:
		return "Polygon[" + itoa(len(v)) + "]"
	case orb.MultiPolygon:
		s := "MultiPolygon["
		for i, p := range v {
			if i > 0 {
				s += " "
			}
			s += itoa(len(p))
		}
		return s + "]"
	}
	return g.GeoJSONType()
}

func TestReader(t *testing.T) {
	body := `{"objectIdFieldName":"OBJECTID","geometryType":"esriGeometryPolygon","spatialReference":{"wkid":4326},
"fields":[{"name":"OBJECTID","type":"esriFieldTypeOID"}],
"features":[
 {"attributes":{"OBJECTID":1,"big":9007199254740993,"name":"a"},"geometry":{"rings":[[[0,0],[0,1],[1,1],[1,0],[0,0]]]}},
 {"attributes":{"OBJECTID":2,"name":null},"geometry":{"curveRings":[]}},
 {"attributes":{"OBJECTID":3,"name":"c"},"geometry":null}
],"exceededTransferLimit":true}`
	fs, r, err := read(t, body, esrijson.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].ID != "1" || fs[1].ID != "3" || fs[1].Geometry != nil {
		t.Fatalf("features %+v", fs)
	}
	if got := fs[0].Properties["big"]; strings.TrimSpace(describeValue(got)) != "9007199254740993" {
		t.Errorf("a 64-bit integer read as %v", got)
	}
	if !r.Exceeded() {
		t.Error("exceededTransferLimit not seen")
	}

	_, _, err = read(t, `{"error":{"code":498,"message":"Invalid Token","details":["token expired"]}}`, esrijson.Options{})
	var se *esrijson.ServiceError
	if !errors.As(err, &se) || se.Code != 498 || !strings.Contains(se.Error(), "token expired") {
		t.Errorf("error body: %v", err)
	}
	_, _, err = read(t, `{"features":[{"attributes":{"OBJECTID":1}},{"attri`, esrijson.Options{})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut-off body: %v", err)
	}
	_, _, err = read(t, `<html><body>Proxy Error</body></html>`, esrijson.Options{})
	var nf *spatial.NotFeaturesError
	if !errors.As(err, &nf) {
		t.Errorf("HTML: %v", err)
	}
	_, _, err = read(t, `{"count":12}`, esrijson.Options{})
	if !errors.As(err, &nf) {
		t.Errorf("a count answer read as features: %v", err)
	}
	_, _, err = read(t, `{"features":[{"attributes":{"s":"`+strings.Repeat("x", 5000)+`"}}]}`, esrijson.Options{Limits: spatial.Limits{FeatureBytes: 1000}})
	if !errors.Is(err, spatial.ErrTooLarge) {
		t.Errorf("a feature past max_feature_bytes: %v", err)
	}
	_, _, err = read(t, `{"features":[{"attributes":{"s":"`+strings.Repeat("x", 5000), esrijson.Options{Limits: spatial.Limits{FeatureBytes: 1000}})
	if !errors.Is(err, spatial.ErrTooLarge) {
		t.Errorf("an unterminated string: %v", err)
	}
}
