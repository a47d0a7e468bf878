package gml

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

// FuzzGMLReader feeds arbitrary bodies to the reader: it must never panic,
// must stop (a final error is sticky, io.EOF ends), and must only return
// features, FeatureErrors, io.EOF or a final error.
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
		r := NewReader(bytes.NewReader(doc), Options{WFSVersion: version})
		for i := 0; ; i++ {
			if i > len(doc)+10 {
				t.Fatalf("more results (%d) than bytes: reader does not advance", i)
			}
			f, err := r.Next()
			if err == nil {
				if f == nil || f.Properties == nil {
					t.Fatal("nil feature or properties without error")
				}
				continue
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				continue
			}
			if _, again := r.Next(); again != err && !(err == io.EOF && again == io.EOF) {
				t.Fatalf("final error not sticky: %v then %v", err, again)
			}
			return
		}
	})
}
