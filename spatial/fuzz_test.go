package spatial

import (
	"math"
	"testing"
)

func FuzzParseBBox(f *testing.F) {
	for _, s := range []string{"1,2,3,4", " -180 , -90 , 180 , 90 ", "1,2,3", "1,2,3,4,EPSG:4326", "NaN,1,2,3", "1e308,1,1e309,2", "", ",,,", "0x10,1,2,3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBBox(s)
		if err != nil {
			return
		}
		if !(b.Min[0] < b.Max[0] && b.Min[1] < b.Max[1]) {
			t.Fatalf("ParseBBox(%q) = %v: accepted an empty or inverted box", s, b)
		}
		for _, v := range []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("ParseBBox(%q) = %v: accepted a non-finite number", s, b)
			}
		}
	})
}

func FuzzSRID(f *testing.F) {
	for _, s := range []string{"EPSG:4326", "urn:ogc:def:crs:EPSG::4326", "urn:x-ogc:def:crs:EPSG:4326", "urn:ogc:def:crs:EPSG:6.9:4326",
		"http://www.opengis.net/def/crs/EPSG/0/4326", "http://www.opengis.net/gml/srs/epsg.xml#4326", "CRS:84",
		"urn:ogc:def:crs:OGC:1.3:CRS84", "http://www.opengis.net/def/crs/EPSG/0/", "EPSG:", "urn:ogc:def:crs:EPSG:", "ŞEPSG:1"} {
		f.Add(s, "2.0.0")
	}
	f.Fuzz(func(t *testing.T, s, version string) {
		n, err := SRID(s)
		if err == nil && n <= 0 {
			t.Fatalf("SRID(%q) = %d without error", s, n)
		}
		if LatLonOrder(s, version) && err != nil {
			t.Fatalf("LatLonOrder(%q) true for an srsName SRID refuses: %v", s, err)
		}
	})
}

func FuzzParseExceptionReport(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?><ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0"><ows:Exception exceptionCode="NoApplicableCode" locator="mapserv"><ows:ExceptionText>msPostGISLayerOpen(): Query error. Database connection failed.</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`))
	f.Add([]byte(`<ServiceExceptionReport version="1.2.0"><ServiceException code="InvalidParameterValue">bad</ServiceException></ServiceExceptionReport>`))
	f.Add([]byte(`<html><body>502</body></html>`))
	f.Add([]byte(`<ows:ExceptionReport><ows:Exception exceptionCode="NoApplic`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, ok := ParseExceptionReport(b)
		if ok && rep == nil {
			t.Fatal("ok without a report")
		}
	})
}
