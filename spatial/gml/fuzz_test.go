package gml

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geoflow/geoflow/spatial/internal/readertest"
)

// FuzzGMLReader feeds arbitrary bodies to the reader: it must never panic,
// must stop (a final error is sticky, io.EOF ends), and must only return
// features, FeatureErrors, io.EOF or a final error; and with ReuseFeatures it must
// return the same.
func FuzzGMLReader(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.xml")
	for _, p := range paths {
		doc, err := os.ReadFile(p)
		if err == nil {
			f.Add(doc, "2.0.0")
		}
	}
	var gen bytes.Buffer
	writeGenFeature(&gen, 1)
	f.Add([]byte(`<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:app="urn:app">`+gen.String()+`</wfs:FeatureCollection>`), "1.1.0")
	f.Fuzz(func(t *testing.T, doc []byte, version string) {
		plain := fuzzRead(t, doc, version, false)
		// A reader that reuses each feature's map and coordinates (as a store's harvest
		// reads) yields the same features, seen as they arrive.
		if reused := fuzzRead(t, doc, version, true); !slices.Equal(plain, reused) {
			t.Fatalf("with ReuseFeatures:\n%q\nwithout:\n%q", reused, plain)
		}
	})
}

// fuzzRead reads doc to its final error, checking the reader's contract (readertest), and
// returns each result as text: a feature's id and payload hash, or the error.
func fuzzRead(t *testing.T, doc []byte, version string, reuse bool) []string {
	r := NewReader(bytes.NewReader(doc), Options{WFSVersion: version})
	if reuse {
		r.ReuseFeatures()
	}
	return readertest.Results(t, r, len(doc)+10)
}
