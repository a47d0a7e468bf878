package wfsserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// discardWriter is a ResponseWriter that counts and drops the body, so the
// benchmark measures the fixture, not a buffer.
type discardWriter struct {
	h http.Header
	n int64
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}
func (d *discardWriter) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }

// BenchmarkGetFeaturePage serves one 1,000-feature page from a layer of a
// million, at a deep offset, in each output format.
func BenchmarkGetFeaturePage(b *testing.B) {
	s := New(Options{Features: 1_000_000, ImplementsSorting: true})
	for _, bc := range []struct{ name, query string }{
		{"gml32", "VERSION=2.0.0&TYPENAMES=gf:parcels"},
		{"gml311", "VERSION=1.1.0&TYPENAME=gf:parcels"},
		{"gml2", "VERSION=1.0.0&TYPENAME=gf:parcels"},
		{"geojson", "VERSION=2.0.0&TYPENAMES=gf:parcels&OUTPUTFORMAT=application/json"},
		{"gml32-bbox", "VERSION=2.0.0&TYPENAMES=gf:parcels&BBOX=48.08,11.47,48.12,11.53"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/wfs?SERVICE=WFS&REQUEST=GetFeature&COUNT=1000&STARTINDEX=500000&SORTBY=parcel_id&"+bc.query, nil)
			if bc.name == "gml32-bbox" {
				r = httptest.NewRequest(http.MethodGet, "/wfs?SERVICE=WFS&REQUEST=GetFeature&COUNT=1000&STARTINDEX=20000&"+bc.query, nil)
			}
			w := &discardWriter{h: http.Header{}}
			s.ServeHTTP(w, r)
			b.SetBytes(w.n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w.h = http.Header{}
				s.ServeHTTP(w, r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/feature")
		})
	}
}

// BenchmarkHarvest100k pages through 100,000 features over real HTTP the way
// a harvester would, 1,000 at a time.
func BenchmarkHarvest100k(b *testing.B) {
	s := New(Options{Features: 100_000, ImplementsSorting: true})
	ts := httptest.NewServer(s)
	defer ts.Close()
	for b.Loop() {
		for start := 0; start < 100_000; start += 1000 {
			resp, err := http.Get(ts.URL + "/wfs?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=gf:parcels&COUNT=1000&SORTBY=parcel_id&STARTINDEX=" + strconv.Itoa(start))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}
