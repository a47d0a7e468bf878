package wfs

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// fixtureDocs returns what the fixture answers to GetCapabilities in every version and
// to DescribeFeatureType, in each flavour, as fuzz seeds.
func fixtureDocs(f *testing.F) [][]byte {
	var docs [][]byte
	for _, flavor := range []string{"", wfsserver.FlavorGeoServer, wfsserver.FlavorMapServer, wfsserver.FlavorDeegree, wfsserver.FlavorQGIS} {
		srv := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 5, Flavor: flavor}))
		for _, q := range []string{
			"SERVICE=WFS&REQUEST=GetCapabilities&VERSION=2.0.0",
			"SERVICE=WFS&REQUEST=GetCapabilities&VERSION=1.1.0",
			"SERVICE=WFS&REQUEST=GetCapabilities&VERSION=1.0.0",
			"SERVICE=WFS&REQUEST=DescribeFeatureType&VERSION=2.0.0&TYPENAMES=gf:parcels",
			"SERVICE=WFS&REQUEST=DescribeFeatureType&VERSION=1.0.0&TYPENAME=gf:parcels",
		} {
			resp, err := http.Get(srv.URL + "/wfs?" + q)
			if err != nil {
				f.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			docs = append(docs, b)
		}
		srv.Close()
	}
	return docs
}

// FuzzParseCapabilities: any document read as capabilities gives capabilities or an
// error, never a panic, and what it gives holds together.
func FuzzParseCapabilities(f *testing.F) {
	for _, d := range fixtureDocs(f) {
		f.Add(d)
	}
	f.Add([]byte(`<WFS_Capabilities version="2.0.0"><FeatureType><Name>a</Name><WGS84BoundingBox><LowerCorner>1 2</LowerCorner><UpperCorner>NaN 4</UpperCorner></WGS84BoundingBox></FeatureType></WFS_Capabilities>`))
	f.Add([]byte(`<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1"><ows:Exception exceptionCode="X"/></ows:ExceptionReport>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		root, err := parseDOM(bytes.NewReader(doc))
		if err != nil {
			return
		}
		caps, err := parseCapabilities(root)
		if err != nil {
			return
		}
		if caps.Version == "" || caps.CountDefault < 0 {
			t.Fatalf("capabilities %+v", caps)
		}
		for _, ft := range caps.FeatureTypes {
			if b := ft.WGS84; b != nil && (b.Min[0] > b.Max[0] || b.Min[1] > b.Max[1]) {
				t.Fatalf("feature type %q with an inverted extent %v", ft.Name, *b)
			}
			if ft.Name != "" {
				if got, err := caps.findType(ft.Name); err != nil || got.Name == "" {
					t.Fatalf("findType(%q) of a listed type: %v", ft.Name, err)
				}
			}
		}
	})
}

// FuzzParseSchema: any document read as a DescribeFeatureType answer gives a schema or
// an error, never a panic; every property has a name.
func FuzzParseSchema(f *testing.F) {
	for _, d := range fixtureDocs(f) {
		f.Add(d, "gf:parcels")
	}
	f.Add([]byte(`<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema"><xsd:element name="parcels" type="x"/><xsd:complexType name="x"><xsd:sequence><xsd:element name="a" type="xsd:int"/></xsd:sequence></xsd:complexType></xsd:schema>`), "parcels")
	f.Fuzz(func(t *testing.T, doc []byte, typeName string) {
		root, err := parseDOM(bytes.NewReader(doc))
		if err != nil {
			return
		}
		s, err := parseSchema(root, typeName)
		if err != nil {
			return
		}
		for _, p := range s.Properties {
			if strings.TrimSpace(p.Name) == "" {
				t.Fatalf("a property without a name in %+v", s)
			}
		}
	})
}
