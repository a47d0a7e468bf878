package wfsserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/clip"
)

func TestCapabilities(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		version    string
		root       string
		rootNS     string
		wantName   string
		want       []string // substrings that must appear
		notWant    []string
		countValue string // CountDefault DefaultValue, "" if absent
	}{
		{
			name: "geoserver 2.0", opts: Options{ImplementsSorting: true, CountDefault: 500}, version: "2.0.0",
			root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs/2.0", wantName: "gf:parcels",
			want: []string{`name="ImplementsResultPaging"><ows:NoValues/><ows:DefaultValue>TRUE`,
				`name="ImplementsSorting"><ows:NoValues/><ows:DefaultValue>TRUE`, "application/json"},
			countValue: "500",
		},
		{
			name: "no sorting no json", opts: Options{NoGeoJSON: true}, version: "2.0.0",
			root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs/2.0", wantName: "gf:parcels",
			want:    []string{`name="ImplementsSorting"><ows:NoValues/><ows:DefaultValue>FALSE`},
			notWant: []string{"application/json"}, countValue: "1000",
		},
		{
			name: "geoserver 1.1", version: "1.1.0", root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs",
			wantName: "gf:parcels", want: []string{"<wfs:DefaultSRS>urn:ogc:def:crs:EPSG::4326", "text/xml; subtype=gml/3.1.1"},
		},
		{
			name: "geoserver 1.0", version: "1.0.0", root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs",
			wantName: "gf:parcels", want: []string{"<SRS>EPSG:4326</SRS>", "<LatLongBoundingBox", "<GML2/>"},
		},
		{
			name: "mapserver 1.1 advertises DefaultMaxFeatures", opts: Options{Flavor: FlavorMapServer}, version: "1.1.0",
			root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs", wantName: "ms:parcels",
			want: []string{`<ows:Constraint name="DefaultMaxFeatures"><ows:Value>1000`},
		},
		{
			name: "qgis negotiates down to 1.1", opts: Options{Flavor: FlavorQGIS}, version: "2.0.0",
			root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs", wantName: "qgs:parcels",
			want: []string{`version="1.1.0"`}, notWant: []string{"CountDefault"},
		},
		{
			name: "typename with prefix option", opts: Options{TypeName: "cad:flurstueck"}, version: "2.0.0",
			root: "WFS_Capabilities", rootNS: "http://www.opengis.net/wfs/2.0", wantName: "cad:flurstueck",
			countValue: "1000",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts := newTestServer(t, tt.opts)
			r := get(t, ts, kvp("SERVICE", "WFS", "REQUEST", "GetCapabilities", "VERSION", tt.version))
			if r.status != http.StatusOK {
				t.Fatalf("status %d", r.status)
			}
			root := parseXML(t, r.body)
			if root.XMLName.Local != tt.root || root.XMLName.Space != tt.rootNS {
				t.Errorf("root {%s}%s, want {%s}%s", root.XMLName.Space, root.XMLName.Local, tt.rootNS, tt.root)
			}
			names := root.all("Name")
			if !slices.ContainsFunc(names, func(n *node) bool { return n.Text == tt.wantName }) {
				t.Errorf("feature type %s not advertised", tt.wantName)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(r.body), w) {
					t.Errorf("capabilities lack %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(r.body), w) {
					t.Errorf("capabilities contain %q", w)
				}
			}
			var count string
			for _, c := range root.all("Constraint") {
				if c.attr("name") == "CountDefault" {
					count = c.all("DefaultValue")[0].Text
				}
			}
			if count != tt.countValue {
				t.Errorf("CountDefault %q, want %q", count, tt.countValue)
			}
		})
	}
}

func TestDescribeFeatureType(t *testing.T) {
	tests := []struct {
		name, version, typeName, gmlNS, base string
	}{
		{"2.0 GML 3.2", "2.0.0", "gf:parcels", "http://www.opengis.net/gml/3.2", "gml:AbstractFeatureType"},
		{"1.1 GML 3.1.1 no prefix", "1.1.0", "parcels", "http://www.opengis.net/gml", "gml:AbstractFeatureType"},
		{"1.0 GML2", "1.0.0", "gf:parcels", "http://www.opengis.net/gml", "gml:AbstractFeatureType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts := newTestServer(t, Options{})
			r := get(t, ts, kvp("SERVICE", "WFS", "VERSION", tt.version, "REQUEST", "DescribeFeatureType", "TYPENAME", tt.typeName))
			root := parseXML(t, r.body)
			if root.XMLName.Local != "schema" || root.attr("targetNamespace") != "https://geoflow.dev/ns/gf" {
				t.Fatalf("not the schema: %.300s", r.body)
			}
			if imp := root.all("import"); len(imp) != 1 || imp[0].attr("namespace") != tt.gmlNS {
				t.Errorf("gml import wrong: %+v", imp)
			}
			if ext := root.all("extension"); len(ext) != 1 || ext[0].attr("base") != tt.base {
				t.Errorf("extension base wrong")
			}
			types := map[string]string{}
			for _, e := range root.all("element") {
				types[e.attr("name")] = e.attr("type")
			}
			want := map[string]string{"geom": "gml:GeometryPropertyType", "parcel_id": "xsd:string", "cadastre_no": "xsd:long",
				"area_m2": "xsd:double", "Land-Use": "xsd:string", "owner_count": "xsd:int", "assessed_value": "xsd:decimal",
				"is_public": "xsd:boolean", "surveyed": "xsd:date", "updated_at": "xsd:dateTime", "parcels": "gf:parcelsType"}
			for k, v := range want {
				if types[k] != v {
					t.Errorf("element %s has type %q, want %q", k, types[k], v)
				}
			}
		})
	}
}

// harvest pages through a layer with STARTINDEX and returns how often each
// parcel was delivered.
func harvest(t *testing.T, ts *httptest.Server, n int, extra ...string) []int {
	t.Helper()
	seen := make([]int, n)
	for start := 0; ; {
		args := append([]string{"SERVICE", "WFS", "REQUEST", "GetFeature", "STARTINDEX", strconv.Itoa(start)}, extra...)
		p := parsePage(t, get(t, ts, kvp(args...)))
		for _, i := range p.ids {
			seen[i]++
		}
		if len(p.ids) == 0 {
			return seen
		}
		start += len(p.ids)
	}
}

func TestPagingWithSortByCoversAllOnce(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		extra []string
	}{
		{"2.0 GML count", Options{}, []string{"VERSION", "2.0.0", "TYPENAMES", "gf:parcels", "COUNT", "700"}},
		{"2.0 json", Options{}, []string{"VERSION", "2.0.0", "TYPENAMES", "parcels", "COUNT", "1000", "OUTPUTFORMAT", "application/json"}},
		{"1.1 maxfeatures capped", Options{CountDefault: 300}, []string{"VERSION", "1.1.0", "TYPENAME", "gf:parcels", "MAXFEATURES", "5000"}},
		{"1.0 GML2", Options{}, []string{"VERSION", "1.0.0", "TYPENAME", "gf:parcels", "MAXFEATURES", "900"}},
		{"desc", Options{}, []string{"VERSION", "2.0.0", "TYPENAMES", "gf:parcels", "COUNT", "1000", "SORTBY", "parcel_id DESC"}},
		{"mapserver", Options{Flavor: FlavorMapServer}, []string{"VERSION", "2.0.0", "TYPENAMES", "ms:parcels", "COUNT", "1000"}},
		{"qgis 1.0 startindex extension", Options{Flavor: FlavorQGIS}, []string{"VERSION", "1.0.0", "TYPENAME", "qgs:parcels", "MAXFEATURES", "800"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Features, tt.opts.UnstableOrder, tt.opts.ImplementsSorting = 2500, true, true
			_, ts := newTestServer(t, tt.opts)
			extra := append(tt.extra, "SORTBY", "parcel_id ASC")
			if slices.Contains(tt.extra, "SORTBY") {
				extra = tt.extra
			}
			for i, c := range harvest(t, ts, 2500, extra...) {
				if c != 1 {
					t.Fatalf("parcel %d delivered %d times", i, c)
				}
			}
		})
	}
}

func TestUnstableOrderLosesWithoutSortBy(t *testing.T) {
	const n = 20000
	tests := []struct {
		name             string
		opts             Options
		minLoss, maxLoss float64
	}{
		{"unstable", Options{UnstableOrder: true}, 0.008, 0.03},
		{"unstable but sorting ignored", Options{UnstableOrder: true, ImplementsSorting: false}, 0.008, 0.03},
		{"stable", Options{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Features = n
			s, ts := newTestServer(t, tt.opts)
			args := []string{"VERSION", "2.0.0", "TYPENAMES", "gf:parcels", "COUNT", "1000", "OUTPUTFORMAT", "application/json"}
			if tt.name == "unstable but sorting ignored" {
				args = append(args, "SORTBY", "parcel_id ASC")
			}
			seen := harvest(t, ts, n, args...)
			lost, dup := 0, 0
			for _, c := range seen {
				if c == 0 {
					lost++
				}
				if c > 1 {
					dup += c - 1
				}
			}
			loss := float64(lost) / n
			t.Logf("lost %d (%.2f%%), duplicated %d, served %d", lost, 100*loss, dup, s.Stats().FeaturesServed)
			if loss < tt.minLoss || loss > tt.maxLoss {
				t.Errorf("loss %.4f outside [%v, %v]", loss, tt.minLoss, tt.maxLoss)
			}
			if lost != dup {
				t.Errorf("every lost row should be replaced by a duplicate: lost %d, dup %d", lost, dup)
			}
		})
	}
}

func TestBBoxAxisOrder(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 5000})
	area := orb.Bound{Min: orb.Point{11.47, 48.07}, Max: orb.Point{11.49, 48.08}}
	want := s.FeaturesIn(area)
	if len(want) < 50 {
		t.Fatalf("test area holds only %d parcels", len(want))
	}
	latlon := "48.07,11.47,48.08,11.49"
	lonlat := "11.47,48.07,11.49,48.08"
	tests := []struct {
		name, version, bbox string
		want                int
	}{
		{"2.0 default CRS is lat,lon", "2.0.0", latlon, len(want)},
		{"2.0 URN is lat,lon", "2.0.0", latlon + ",urn:ogc:def:crs:EPSG::4326", len(want)},
		{"2.0 http URI is lat,lon", "2.0.0", latlon + ",http://www.opengis.net/def/crs/EPSG/0/4326", len(want)},
		{"2.0 EPSG:4326 is lon,lat", "2.0.0", lonlat + ",EPSG:4326", len(want)},
		{"2.0 CRS84 is lon,lat", "2.0.0", lonlat + ",urn:ogc:def:crs:OGC:1.3:CRS84", len(want)},
		{"2.0 swapped finds nothing", "2.0.0", lonlat, 0},
		{"1.1 default CRS is lat,lon", "1.1.0", latlon, len(want)},
		{"1.1 EPSG:4326 is lon,lat", "1.1.0", lonlat + ",EPSG:4326", len(want)},
		{"1.0 is lon,lat", "1.0.0", lonlat, len(want)},
		{"1.0 swapped finds nothing", "1.0.0", latlon, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", tt.version, "REQUEST", "GetFeature",
				"TYPENAME", "gf:parcels", "BBOX", tt.bbox, "SORTBY", "parcel_id")))
			if len(p.ids) != tt.want {
				t.Fatalf("got %d parcels, want %d", len(p.ids), tt.want)
			}
			if tt.want > 0 && !slices.Equal(p.ids, want) {
				t.Errorf("got other parcels than FeaturesIn")
			}
		})
	}
	st := s.Stats()
	if len(st.BBoxes) != len(tests) || st.BBoxes[0] != area {
		t.Errorf("recorded bboxes %v, want %d starting with %v", st.BBoxes, len(tests), area)
	}
}

func TestOutputAxisOrder(t *testing.T) {
	tests := []struct {
		name   string
		flavor string
		args   []string
		latLon bool
	}{
		{"2.0 GML 3.2 default URN", "", []string{"VERSION", "2.0.0"}, true},
		{"2.0 GML 3.2 EPSG:4326", "", []string{"VERSION", "2.0.0", "SRSNAME", "EPSG:4326"}, false},
		{"1.1 GML 3.1.1 default", "", []string{"VERSION", "1.1.0"}, true},
		{"1.0 GML2", "", []string{"VERSION", "1.0.0"}, false},
		{"geojson", "", []string{"VERSION", "2.0.0", "OUTPUTFORMAT", "application/json"}, false},
		{"geoserver geojson with URN", "", []string{"VERSION", "2.0.0", "OUTPUTFORMAT", "application/json", "SRSNAME", "urn:ogc:def:crs:EPSG::4326"}, true},
		{"deegree geojson with URN", FlavorDeegree, []string{"VERSION", "2.0.0", "OUTPUTFORMAT", "application/json", "SRSNAME", "urn:ogc:def:crs:EPSG::4326"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: 10, Flavor: tt.flavor})
			r := get(t, ts, kvp(append([]string{"REQUEST", "GetFeature", "TYPENAME", s.TypeName(), "COUNT", "1"}, tt.args...)...))
			first := s.Feature(0).Geometry.(orb.Polygon)[0][0]
			a, b := first[0], first[1]
			if tt.latLon {
				a, b = b, a
			}
			body := string(r.body)
			var want []string
			for _, sep := range []string{" ", ",", "["} {
				x := strconv.FormatFloat(a, 'f', -1, 64) + sep + strconv.FormatFloat(b, 'f', -1, 64)
				if sep == "[" {
					x = "[" + strconv.FormatFloat(a, 'f', -1, 64) + "," + strconv.FormatFloat(b, 'f', -1, 64) + "]"
				}
				want = append(want, x)
			}
			if !strings.Contains(body, want[0]) && !strings.Contains(body, want[1]) && !strings.Contains(body, want[2]) {
				t.Errorf("first vertex %v not found in expected order: %.600s", first, body)
			}
		})
	}
}

func TestHitsMatchGroundTruth(t *testing.T) {
	for _, n := range []int{1, 7, 1000, 12345} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: n, Seed: int64(n)})
			rng := rand.New(rand.NewPCG(uint64(n), 2))
			for k := range min(25, 100_000/n) {
				w, h := rng.Float64()*0.05, rng.Float64()*0.05
				x, y := 11.44+rng.Float64()*0.12, 48.04+rng.Float64()*0.12
				b := orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + w, y + h}}
				got := s.FeaturesIn(b)
				var brute []int
				for i := range n {
					if c := clip.Geometry(b, s.Feature(i).Geometry); c != nil && len(flatten(c)) > 0 {
						brute = append(brute, i)
					}
				}
				if !slices.Equal(got, brute) {
					t.Fatalf("bbox %d %v: grid search %d parcels, brute force %d", k, b, len(got), len(brute))
				}
				for _, v := range []string{"2.0.0", "1.1.0"} {
					r := get(t, ts, kvp("SERVICE", "WFS", "VERSION", v, "REQUEST", "GetFeature", "TYPENAME", "gf:parcels",
						"RESULTTYPE", "hits", "BBOX", fmt.Sprintf("%v,%v,%v,%v,EPSG:4326", b.Min[0], b.Min[1], b.Max[0], b.Max[1])))
					p := parsePage(t, r)
					hits := cmpOr(p.numberMatched, p.numberReturned)
					if hits != strconv.Itoa(len(got)) {
						t.Fatalf("%s hits %s, FeaturesIn %d", v, hits, len(got))
					}
				}
			}
		})
	}
}

func flatten(g orb.Geometry) []orb.Point {
	var pts []orb.Point
	switch g := g.(type) {
	case orb.Polygon:
		for _, r := range g {
			pts = append(pts, r...)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			pts = append(pts, flatten(p)...)
		}
	}
	return pts
}

func TestGeometryIsValidAndSomeStraddle(t *testing.T) {
	s := New(Options{Features: 20000, Seed: 3})
	g := &s.grid
	var holes, multis, straddle int
	for i := range g.n {
		f := s.Feature(i)
		var polys orb.MultiPolygon
		switch geom := f.Geometry.(type) {
		case orb.Polygon:
			polys = orb.MultiPolygon{geom}
			if len(geom) > 1 {
				holes++
			}
		case orb.MultiPolygon:
			polys = geom
			multis++
		}
		for _, p := range polys {
			for k, r := range p {
				if len(r) < 4 || r[0] != r[len(r)-1] {
					t.Fatalf("parcel %d ring %d not closed", i, k)
				}
				if selfIntersects(r) {
					t.Fatalf("parcel %d ring %d self-intersects", i, k)
				}
				if ccw := signedArea(r) > 0; ccw != (k == 0) {
					t.Fatalf("parcel %d ring %d has the wrong orientation", i, k)
				}
				if k > 0 && !ringContains(p[0], r[0]) {
					t.Fatalf("parcel %d hole outside exterior", i)
				}
			}
		}
		cell := orb.Bound{
			Min: orb.Point{g.ext.Min[0] + float64(i%g.cols)*g.dx, g.ext.Min[1] + float64(i/g.cols)*g.dy},
		}
		cell.Max = orb.Point{cell.Min[0] + g.dx, cell.Min[1] + g.dy}
		if b := f.Geometry.Bound(); !cell.Contains(b.Min) || !cell.Contains(b.Max) {
			straddle++
			if b.Min[0] < cell.Min[0]-maxOverhang*g.dx || b.Max[0] > cell.Max[0]+maxOverhang*g.dx {
				t.Fatalf("parcel %d reaches beyond maxOverhang", i)
			}
		}
	}
	t.Logf("holes %d, multipolygons %d, straddling %d of %d", holes, multis, straddle, g.n)
	for name, c := range map[string]int{"holes": holes, "multipolygons": multis, "straddling": straddle} {
		if c < g.n/100 || c > g.n/5 {
			t.Errorf("%s: %d of %d", name, c, g.n)
		}
	}
}

func signedArea(r orb.Ring) float64 {
	var a float64
	for j := 0; j+1 < len(r); j++ {
		a += r[j][0]*r[j+1][1] - r[j+1][0]*r[j][1]
	}
	return a / 2
}

func selfIntersects(r orb.Ring) bool {
	cross := func(o, a, b orb.Point) float64 { return (a[0]-o[0])*(b[1]-o[1]) - (a[1]-o[1])*(b[0]-o[0]) }
	n := len(r) - 1
	for i := range n {
		for j := i + 2; j < n; j++ {
			if i == 0 && j == n-1 {
				continue // adjacent through the closing point
			}
			a, b, c, d := r[i], r[i+1], r[j], r[j+1]
			if cross(a, b, c)*cross(a, b, d) < 0 && cross(c, d, a)*cross(c, d, b) < 0 {
				return true
			}
		}
	}
	return false
}

func TestFeaturePropertiesAreServed(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 3000})
	var nilZone, emptyZone, special int
	for i := range s.Len() {
		switch z := s.Feature(i).Properties["zone"]; {
		case z == nil:
			nilZone++
		case z == "":
			emptyZone++
		case strings.ContainsAny(z.(string), "&<\""):
			special++
		}
	}
	if nilZone == 0 || emptyZone == 0 || special == 0 {
		t.Fatalf("awkward values missing: nil %d, empty %d, special %d", nilZone, emptyZone, special)
	}
	r := get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "COUNT", "1000"))
	root := parseXML(t, r.body)
	members := root.all("parcels")
	if len(members) != 1000 {
		t.Fatalf("%d members", len(members))
	}
	for k, m := range members {
		f := s.Feature(k)
		for _, c := range m.Children {
			want := f.Properties[c.XMLName.Local]
			if c.XMLName.Local == "geom" {
				continue
			}
			if c.attr("nil") == "true" {
				if want != nil {
					t.Fatalf("parcel %d %s nil, want %v", k, c.XMLName.Local, want)
				}
				continue
			}
			if tm, ok := want.(time.Time); ok {
				want = tm.Format(time.RFC3339)
			}
			if got := c.Text; fmt.Sprint(want) != got {
				t.Fatalf("parcel %d %s = %q, want %v", k, c.XMLName.Local, got, want)
			}
		}
	}
}

func TestExceptions(t *testing.T) {
	tests := []struct {
		name, flavor, query string
		status              int
		root, code, locator string
	}{
		{"2.0 unknown typename", "", kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:nope"),
			400, "ExceptionReport", "InvalidParameterValue", "typeName"},
		{"1.1 unknown typename", "", kvp("SERVICE", "WFS", "VERSION", "1.1.0", "REQUEST", "GetFeature", "TYPENAME", "nope"),
			400, "ExceptionReport", "InvalidParameterValue", "typeName"},
		{"1.0 unknown typename", "", kvp("SERVICE", "WFS", "VERSION", "1.0.0", "REQUEST", "GetFeature", "TYPENAME", "nope"),
			400, "ServiceExceptionReport", "InvalidParameterValue", "typeName"},
		{"missing request", "", kvp("SERVICE", "WFS"), 400, "ExceptionReport", "MissingParameterValue", "request"},
		{"unknown operation", "", kvp("SERVICE", "WFS", "REQUEST", "Transaction"), 501, "ExceptionReport", "OperationNotSupported", "request"},
		{"bad version", "", kvp("SERVICE", "WFS", "VERSION", "3.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels"),
			400, "ExceptionReport", "InvalidParameterValue", "version"},
		{"bad bbox", "", kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "BBOX", "1,2,3"),
			400, "ExceptionReport", "InvalidParameterValue", "bbox"},
		{"bad srs", "", kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "SRSNAME", "EPSG:3857"),
			400, "ExceptionReport", "InvalidParameterValue", "srsName"},
		{"mapserver answers 200", FlavorMapServer, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "nope"),
			200, "ExceptionReport", "InvalidParameterValue", "typeName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Flavor: tt.flavor})
			r := get(t, ts, tt.query)
			if r.status != tt.status {
				t.Errorf("status %d, want %d", r.status, tt.status)
			}
			root := parseXML(t, r.body)
			if root.XMLName.Local != tt.root {
				t.Fatalf("root %s, want %s", root.XMLName.Local, tt.root)
			}
			var code, loc string
			root.walk(func(n *node) {
				if c := cmpOr(n.attr("exceptionCode"), n.attr("code")); c != "" {
					code, loc = c, n.attr("locator")
				}
			})
			if code != tt.code || loc != tt.locator {
				t.Errorf("code %q locator %q, want %q %q", code, loc, tt.code, tt.locator)
			}
			if s.Stats().Exceptions != 1 {
				t.Errorf("exceptions counted %d", s.Stats().Exceptions)
			}
		})
	}
}

func TestQuota(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	tests := []struct {
		name    string
		quota   Quota
		check   func(t *testing.T, h http.Header)
		refused int
	}{
		{"fixed window x-ratelimit", Quota{Limit: 5, Window: time.Minute, RetryAfter: true}, func(t *testing.T, h http.Header) {
			if h.Get("X-RateLimit-Limit") != "5" || h.Get("X-RateLimit-Remaining") != "0" ||
				h.Get("X-RateLimit-Reset") != strconv.FormatInt(start.Truncate(time.Minute).Add(time.Minute).Unix(), 10) {
				t.Errorf("headers %v", h)
			}
			if h.Get("Retry-After") != "50" {
				t.Errorf("Retry-After %q, want 50", h.Get("Retry-After"))
			}
		}, 3},
		{"retry-after as http-date", Quota{Limit: 5, Window: time.Minute, RetryAfter: true, RetryAfterHTTPDate: true}, func(t *testing.T, h http.Header) {
			if want := "Thu, 01 Jan 2026 12:01:00 GMT"; h.Get("Retry-After") != want {
				t.Errorf("Retry-After %q, want %q", h.Get("Retry-After"), want)
			}
		}, 3},
		{"ietf headers", Quota{Limit: 5, Window: time.Minute, Headers: "ietf"}, func(t *testing.T, h http.Header) {
			if h.Get("RateLimit-Policy") != `"default";q=5;w=60` || h.Get("RateLimit") != `"default";r=0;t=50` {
				t.Errorf("headers %v", h)
			}
			if h.Get("Retry-After") != "" {
				t.Errorf("Retry-After without RetryAfter")
			}
		}, 3},
		{"token bucket", Quota{Limit: 5, Window: 10 * time.Second, TokenBucket: true, RetryAfter: true}, func(t *testing.T, h http.Header) {
			if h.Get("Retry-After") != "2" || h.Get("X-RateLimit-Remaining") != "0" {
				t.Errorf("headers %v", h)
			}
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start
			var mu sync.Mutex
			s, ts := newTestServer(t, Options{Features: 10, Quota: &tt.quota, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
			q := kvp("SERVICE", "WFS", "REQUEST", "GetCapabilities")
			refused := 0
			var last http.Header
			for range 8 {
				r := get(t, ts, q)
				if r.status == http.StatusTooManyRequests {
					refused++
					last = r.header
				}
			}
			if refused != tt.refused || s.Stats().TooManyRequests != int64(tt.refused) {
				t.Fatalf("refused %d, want %d", refused, tt.refused)
			}
			tt.check(t, last)
			mu.Lock()
			now = now.Add(time.Minute)
			mu.Unlock()
			if r := get(t, ts, q); r.status != http.StatusOK {
				t.Errorf("after the window: status %d", r.status)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	q := kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "COUNT", "1000")
	tests := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, r response)
		stat   func(Stats) int64
	}{
		{"truncate", Faults{RateTruncate: 1}, func(t *testing.T, r response) {
			if r.status != 200 || !errors.Is(r.err, io.ErrUnexpectedEOF) {
				t.Errorf("status %d err %v, want 200 and unexpected EOF", r.status, r.err)
			}
			if strings.HasSuffix(string(r.body), "</wfs:FeatureCollection>\n") {
				t.Errorf("body complete")
			}
		}, func(s Stats) int64 { return s.FaultsTruncated }},
		{"5xx", Faults{Rate5xx: 1}, func(t *testing.T, r response) {
			if r.status < 500 {
				t.Errorf("status %d", r.status)
			}
		}, func(s Stats) int64 { return s.Faults5xx }},
		{"exception with 200", Faults{RateException200: 1}, func(t *testing.T, r response) {
			if r.status != 200 || parseXML(t, r.body).XMLName.Local != "ExceptionReport" {
				t.Errorf("status %d body %.200s", r.status, r.body)
			}
		}, func(s Stats) int64 { return s.FaultsException200 }},
		{"html with 200", Faults{RateHTML200: 1}, func(t *testing.T, r response) {
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				t.Errorf("status %d type %s", r.status, r.header.Get("Content-Type"))
			}
		}, func(s Stats) int64 { return s.FaultsHTML200 }},
		{"fail forever", Faults{FailForever: func(r *http.Request) bool { return r.URL.Query().Get("COUNT") == "1000" }},
			func(t *testing.T, r response) {
				if r.status != 500 {
					t.Errorf("status %d", r.status)
				}
			}, func(s Stats) int64 { return s.FailedForever }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: 3000, Faults: tt.faults})
			for range 3 {
				tt.check(t, get(t, ts, q))
			}
			if got := tt.stat(s.Stats()); got != 3 || s.Stats().Faults != 3 {
				t.Errorf("fault counted %d (all %d), want 3", got, s.Stats().Faults)
			}
			s.SetFaults(Faults{})
			if p := parsePage(t, get(t, ts, q)); len(p.ids) != 1000 {
				t.Errorf("healed server returned %d", len(p.ids))
			}
		})
	}
}

func TestFaultRates(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 100, Faults: Faults{Rate5xx: 0.1, RateTruncate: 0.1, RateException200: 0.1, RateHTML200: 0.1, Seed: 9}})
	for range 400 {
		get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels"))
	}
	st := s.Stats()
	for name, c := range map[string]int64{"5xx": st.Faults5xx, "truncated": st.FaultsTruncated, "exc200": st.FaultsException200, "html200": st.FaultsHTML200} {
		if c < 20 || c > 65 {
			t.Errorf("%s: %d of 400 at rate 0.1", name, c)
		}
	}
}

func TestNextLinks(t *testing.T) {
	tests := []struct {
		name      string
		flavor    string
		args      []string
		wantNext  bool
		matched   string
		follow    bool
		hitsNext  bool
		skipMatch bool
	}{
		{"geoserver needs startindex", "", []string{"COUNT", "1000"}, false, "2500", false, false, false},
		{"geoserver with startindex", "", []string{"COUNT", "1000", "STARTINDEX", "0"}, true, "2500", true, false, false},
		{"geoserver skip numberMatched", "", []string{"COUNT", "1000", "STARTINDEX", "0"}, true, "unknown", true, false, true},
		{"deegree count only", FlavorDeegree, []string{"COUNT", "1000"}, true, "2500", true, true, false},
		{"mapserver unknown numberMatched", FlavorMapServer, []string{"COUNT", "1000"}, true, "unknown", true, false, false},
		{"geojson links", "", []string{"COUNT", "1000", "STARTINDEX", "0", "OUTPUTFORMAT", "application/json"}, true, "2500", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: 2500, Flavor: tt.flavor, ImplementsSorting: true, SkipNumberMatched: tt.skipMatch})
			base := []string{"SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", s.TypeName(), "SORTBY", "parcel_id"}
			p := parsePage(t, get(t, ts, kvp(append(base, tt.args...)...)))
			if (p.next != "") != tt.wantNext || p.numberMatched != tt.matched {
				t.Fatalf("next %q numberMatched %q", p.next, p.numberMatched)
			}
			if tt.follow {
				seen := map[int]bool{}
				for {
					for _, i := range p.ids {
						seen[i] = true
					}
					if p.next == "" {
						break
					}
					resp, err := http.Get(p.next)
					if err != nil {
						t.Fatal(err)
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					p = parsePage(t, response{status: resp.StatusCode, body: body, err: err})
				}
				if len(seen) != 2500 {
					t.Errorf("following next saw %d", len(seen))
				}
			}
			h := parsePage(t, get(t, ts, kvp(append(base, "COUNT", "1000", "RESULTTYPE", "hits")...)))
			if h.numberMatched != "2500" || h.numberReturned != "0" || (h.next != "") != tt.hitsNext {
				t.Errorf("hits: %+v", h)
			}
		})
	}
}

func TestPostGetFeature(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 5000, ImplementsSorting: true})
	area := orb.Bound{Min: orb.Point{11.47, 48.07}, Max: orb.Point{11.49, 48.08}}
	body := `<wfs:GetFeature service="WFS" version="2.0.0" count="1000" xmlns:wfs="http://www.opengis.net/wfs/2.0"
  xmlns:fes="http://www.opengis.net/fes/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:gf="https://geoflow.dev/ns/gf">
 <wfs:Query typeNames="gf:parcels">
  <fes:Filter><fes:BBOX><fes:ValueReference>geom</fes:ValueReference>
   <gml:Envelope srsName="urn:ogc:def:crs:EPSG::4326"><gml:lowerCorner>48.07 11.47</gml:lowerCorner><gml:upperCorner>48.08 11.49</gml:upperCorner></gml:Envelope>
  </fes:BBOX></fes:Filter>
  <fes:SortBy><fes:SortProperty><fes:ValueReference>parcel_id</fes:ValueReference><fes:SortOrder>DESC</fes:SortOrder></fes:SortProperty></fes:SortBy>
 </wfs:Query>
</wfs:GetFeature>`
	p := parsePage(t, post(t, ts, body))
	want := s.FeaturesIn(area)
	slices.Reverse(want)
	if !slices.Equal(p.ids, want) {
		t.Errorf("POST returned %d parcels, want %d in descending order", len(p.ids), len(want))
	}
	f := `<fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0"><fes:ResourceId rid="parcels.7"/><fes:ResourceId rid="parcels.3"/></fes:Filter>`
	p = parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "FILTER", f)))
	if !slices.Equal(p.ids, []int{3, 7}) {
		t.Errorf("resource id filter returned %v", p.ids)
	}
}

func TestConcurrentUse(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 5000, UnstableOrder: true, Faults: Faults{RateTruncate: 0.2}, Quota: &Quota{Limit: 1000}})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for k := range 10 {
				resp, err := http.Get(ts.URL + "/wfs?" + kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature",
					"TYPENAMES", "gf:parcels", "COUNT", "200", "STARTINDEX", strconv.Itoa((w*10+k)*50)))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.GetFeature != 80 || st.Requests != 80 {
		t.Errorf("stats %+v", st)
	}
}

func TestMillionFeaturesCheap(t *testing.T) {
	s := New(Options{Features: 1_000_000})
	b := orb.Bound{Min: orb.Point{11.50, 48.10}, Max: orb.Point{11.5005, 48.1005}}
	start := time.Now()
	ids := s.FeaturesIn(b)
	if len(ids) == 0 || len(ids) > 100 {
		t.Errorf("%d parcels in a small box", len(ids))
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("small bbox query took %v: not using the grid", d)
	}
	if n := len(s.FeaturesIn(orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}})); n != 1_000_000 {
		t.Errorf("whole extent holds %d", n)
	}
}

func FuzzServeHTTP(f *testing.F) {
	f.Add("SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf:parcels&BBOX=48.07,11.47,48.08,11.49&COUNT=3")
	f.Add("request=getfeature&typename=parcels&version=1.0.0&startindex=7&sortby=parcel_id+DESC&outputformat=json")
	f.Add("REQUEST=GetFeature&TYPENAMES=gf:parcels&FILTER=%3CFilter%3E%3CBBOX%3E%3CEnvelope%3E%3ClowerCorner%3E1 2%3C/lowerCorner%3E%3C/Envelope%3E%3C/BBOX%3E%3C/Filter%3E")
	s := New(Options{Features: 50, ImplementsSorting: true, UnstableOrder: true})
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest(http.MethodGet, "/wfs", nil)
		r.URL.RawQuery = q
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code == 0 || w.Body.Len() == 0 {
			t.Fatalf("no answer to %q", q)
		}
	})
}

func TestAppendFixed7MatchesFormatFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200000 {
		v := round7((rng.Float64() - 0.5) * 400)
		if got, want := string(appendFixed7(nil, v)), strconv.FormatFloat(v, 'f', -1, 64); got != want {
			t.Fatalf("appendFixed7(%v) = %s, want %s", v, got, want)
		}
	}
	for _, v := range []float64{0, 1, -1, 11.45, 48.1000001, -0.0000001, 180, -90} {
		if got, want := string(appendFixed7(nil, v)), strconv.FormatFloat(v, 'f', -1, 64); got != want {
			t.Fatalf("appendFixed7(%v) = %s, want %s", v, got, want)
		}
	}
}

func TestListenAndServe(t *testing.T) {
	s := New(Options{Features: 10})
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, "127.0.0.1:0", func(u string) { urls <- u }) }()
	u := <-urls
	resp, err := http.Get(u + "?SERVICE=WFS&REQUEST=GetCapabilities")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `xlink:href="`+u+`"`) {
		t.Errorf("capabilities do not advertise %s", u)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
}
