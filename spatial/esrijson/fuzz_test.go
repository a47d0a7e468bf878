package esrijson_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/esrijson"
)

// FuzzReader: any body either yields features or ends with an error, within the limits,
// never panicking; a feature error never stops the reader.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"objectIdFieldName":"OBJECTID","features":[{"attributes":{"OBJECTID":1},"geometry":{"rings":[[[0,0],[0,1],[1,1],[1,0],[0,0]],[[0.2,0.2],[0.8,0.2],[0.8,0.8],[0.2,0.8],[0.2,0.2]]]}}],"exceededTransferLimit":true}`,
		`{"features":[{"attributes":{"a":"b"},"geometry":{"x":"NaN","y":"NaN"}},{"geometry":{"paths":[[[0,0],[1,1]],[[2,2],[3,3,4]]]}}]}`,
		`{"error":{"code":498,"message":"Invalid Token","details":[]}}`,
		`{"features":[{"attributes":{"OBJECTID":1}},{"attri`,
		`{"count":3}`,
		`<html>Proxy Error</html>`,
		`{"features":[{"geometry":{"curveRings":[[[0,0],{"a":[[1,1],[0,0],0,1]}]]}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := esrijson.NewReader(bytes.NewReader(body), esrijson.Options{Limits: spatial.Limits{FeatureBytes: 1 << 16, Vertices: 1000}})
		for range 10_000 {
			feat, err := r.Next()
			if err == io.EOF {
				return
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				continue
			}
			if err != nil {
				if _, again := r.Next(); again == nil || again == io.EOF {
					t.Fatalf("a final error %v was followed by %v", err, again)
				}
				return
			}
			if feat.Properties == nil {
				t.Fatal("a feature without properties")
			}
		}
	})
}
