package geojson

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

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
		r := NewReader(bytes.NewReader(doc), Options{SwapXY: swap})
		for i := 0; ; i++ {
			if i > len(doc)+10 {
				t.Fatalf("more results (%d) than bytes: reader does not advance", i)
			}
			f, err := r.Next()
			if err == nil {
				if f == nil || f.Properties == nil {
					t.Fatal("nil feature or properties without error")
				}
				_ = spatial.PayloadHash(f)
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
