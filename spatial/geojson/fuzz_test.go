package geojson

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geoflow/geoflow/spatial/internal/readertest"
)

// FuzzGeoJSONReader feeds arbitrary bodies to the reader: it must never panic, must stop
// (a final error is sticky), and with ReuseFeatures must return the same features.
func FuzzGeoJSONReader(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.json")
	for _, p := range paths {
		doc, err := os.ReadFile(p)
		if err == nil {
			f.Add(doc, false)
		}
	}
	gen, _ := io.ReadAll(&genReader{n: 2})
	f.Add(gen, true)
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"geometry":{"type":"GeometryCollection","geometries":[{"type":"GeometryCollection","geometries":[]}]}}]}`), false)
	f.Fuzz(func(t *testing.T, doc []byte, swap bool) {
		plain := fuzzRead(t, doc, swap, false)
		// A reader that reuses each feature's map and coordinates (as a store's harvest
		// reads) yields the same features, seen as they arrive.
		if reused := fuzzRead(t, doc, swap, true); !slices.Equal(plain, reused) {
			t.Fatalf("with ReuseFeatures:\n%q\nwithout:\n%q", reused, plain)
		}
	})
}

// fuzzRead reads doc to its final error, checking the reader's contract (readertest), and
// returns each result as text: a feature's id and payload hash, or the error.
func fuzzRead(t *testing.T, doc []byte, swap, reuse bool) []string {
	r := NewReader(bytes.NewReader(doc), Options{SwapXY: swap})
	if reuse {
		r.ReuseFeatures()
	}
	return readertest.Results(t, r, len(doc)+10)
}
