package wfsserver

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
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
