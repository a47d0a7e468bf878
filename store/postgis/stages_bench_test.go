package postgis

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/spatial/gml"
	"github.com/geoflow/geoflow/spatial/wkb"
	"github.com/geoflow/geoflow/store"
)

// stagePage is one 1,000-feature GetFeature page of the sample parcels (20-vertex
// polygons, ten properties of mixed types) as the dev WFS serves it.
func stagePage(b *testing.B, query string) []byte {
	b.Helper()
	s := wfsserver.New(wfsserver.Options{Features: 100_000, ImplementsSorting: true})
	r := httptest.NewRequest(http.MethodGet, "/wfs?SERVICE=WFS&REQUEST=GetFeature&COUNT=1000&STARTINDEX=50000&SORTBY=parcel_id&"+query, nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		b.Fatalf("GetFeature: %d %s", w.Code, w.Body.Bytes()[:min(200, w.Body.Len())])
	}
	return w.Body.Bytes()
}

// stageTable is the feature table a harvest of the parcels writes: one column per
// property, typed from its XSD type as the WFS task types it.
func stageTable() *store.FeatureTable {
	var cols []store.Column
	for _, a := range wfsserver.New(wfsserver.Options{Features: 1}).Schema() {
		t := store.TypeText
		switch a.XSDType {
		case "int", "long":
			t = store.TypeBigint
		case "double":
			t = store.TypeDouble
		case "decimal":
			t = store.TypeNumeric
		case "boolean":
			t = store.TypeBoolean
		case "date":
			t = store.TypeDate
		case "dateTime":
			t = store.TypeTimestamptz
		}
		cols = append(cols, store.Column{Name: strings.ToLower(a.Name), Property: a.Name, Type: t})
	}
	return &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: cols}
}

func readAll(b *testing.B, r spatial.Reader) []*spatial.Feature {
	var fs []*spatial.Feature
	for {
		f, err := r.Next()
		if err == io.EOF {
			return fs
		}
		if err != nil {
			b.Fatal(err)
		}
		fs = append(fs, f)
	}
}

// drain reads r to its end, keeping nothing.
func drain(b *testing.B, r spatial.Reader) {
	for {
		_, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// perFeature reports the benchmark's figures per feature of a page of n: wall time,
// and the process's CPU time since cpu0 (the GC's included), which says more on a
// shared machine.
func perFeature(b *testing.B, n int, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/feature")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/feature")
}

// BenchmarkStages measures each stage of the shared harvest path on one 1,000-feature
// page of the sample parcels: decoding (GeoJSON, GML 3.2), the payload hash, the
// staging row COPY sends to PostGIS (hash, WKB and column text), and the WKB alone.
// No database: what a feature costs the client's CPU.
func BenchmarkStages(b *testing.B) {
	gj := stagePage(b, "VERSION=2.0.0&TYPENAMES=gf:parcels&OUTPUTFORMAT=application/json")
	gm := stagePage(b, "VERSION=2.0.0&TYPENAMES=gf:parcels")
	fs := readAll(b, geojson.NewReader(bytes.NewReader(gj), geojson.Options{}))
	if len(fs) != 1000 {
		b.Fatalf("page of %d features", len(fs))
	}
	b.Run("decode-geojson", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			readAll(b, geojson.NewReader(bytes.NewReader(gj), geojson.Options{}))
		}
		perFeature(b, len(fs), cpu0)
	})
	b.Run("decode-gml32", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			readAll(b, gml.NewReader(bytes.NewReader(gm), gml.Options{WFSVersion: "2.0.0", TypeName: "gf:parcels"}))
		}
		perFeature(b, len(fs), cpu0)
	})
	// The harvest decodes with ReuseFeatures: the sink is done with a feature before the next.
	for _, d := range []struct {
		name string
		open func() spatial.Reader
	}{
		{"decode-geojson-reuse", func() spatial.Reader { return geojson.NewReader(bytes.NewReader(gj), geojson.Options{}) }},
		{"decode-gml32-reuse", func() spatial.Reader {
			return gml.NewReader(bytes.NewReader(gm), gml.Options{WFSVersion: "2.0.0", TypeName: "gf:parcels"})
		}},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				r := d.open()
				r.(spatial.FeatureReuser).ReuseFeatures()
				drain(b, r)
			}
			perFeature(b, len(fs), cpu0)
		})
	}
	b.Run("hash", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		var h spatial.Hasher
		for b.Loop() {
			for _, f := range fs {
				h.Source(f)
			}
		}
		perFeature(b, len(fs), cpu0)
	})
	t := stageTable()
	b.Run("copy-row", func(b *testing.B) {
		var row []byte
		var h spatial.Hasher
		pick := t.Picker()
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			for _, f := range fs {
				var err error
				if row, err = appendRow(row[:0], f, h.Pick(f, pick), pick, t); err != nil {
					b.Fatal(err)
				}
			}
		}
		perFeature(b, len(fs), cpu0)
	})
	b.Run("wkb", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		var buf []byte
		for b.Loop() {
			for _, f := range fs {
				buf, _ = wkb.Append(buf[:0], f.Geometry, wkb.Options{})
			}
		}
		perFeature(b, len(fs), cpu0)
	})
}
