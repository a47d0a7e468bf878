package wfsserver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
)

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
