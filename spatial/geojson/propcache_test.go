package geojson

import (
	"fmt"
	"strings"
	"testing"
)

// featureCollection wraps features into a FeatureCollection.
func featureCollection(features ...string) []byte {
	return []byte(`{"type":"FeatureCollection","features":[` + strings.Join(features, ",") + `]}`)
}

// cycling writes n features whose "use" and "floors" cycle through k values and
// whose "name" and "id" are unique, so that slots warm up, hit, miss and go cold.
func cycling(n, k int) []byte {
	fs := make([]string, n)
	for i := range fs {
		fs[i] = fmt.Sprintf(`{"type":"Feature","id":"f.%d","geometry":null,"properties":{"use":"u%d","floors":%d,"name":"n%d","h":%d.5}}`,
			i, i%k, i%k, i, i)
	}
	return featureCollection(fs...)
}

// TestSharedValuesAndID holds the reader to the reference where property values are
// shared across features and the id shares the properties' string.
func TestSharedValuesAndID(t *testing.T) {
	tests := []struct {
		name string
		doc  []byte
	}{
		{"few values", cycling(100, 3)},
		{"more values than kept", cycling(100, recentValues+3)},
		{"unique values", cycling(100, 1000)},
		{"id after properties", featureCollection(
			`{"properties":{"a":"x","b":"y"},"id":"one","geometry":null,"type":"Feature"}`,
			`{"properties":{"a":"x","b":"z"},"id":"two","geometry":null,"type":"Feature"}`)},
		{"id without string properties", featureCollection(
			`{"type":"Feature","id":"one","geometry":null,"properties":{"a":1}}`,
			`{"type":"Feature","id":"two","geometry":null,"properties":null}`,
			`{"type":"Feature","id":"three","geometry":null}`)},
		{"repeated ids", featureCollection(
			`{"type":"Feature","id":"one","id":7,"geometry":null,"properties":{"a":"x"}}`,
			`{"type":"Feature","id":7,"id":"two","geometry":null,"properties":{"a":"y"}}`,
			`{"type":"Feature","id":"a","properties":{"a":"z"},"id":"b","properties":{"b":"w"}}`)},
		{"escaped id and repeated names", featureCollection(
			`{"type":"Feature","id":"\u00e9\n","geometry":null,"properties":{"a":"x","b":"y","a":"z"}}`,
			`{"type":"Feature","id":"","geometry":null,"properties":{"a":"z","b":2,"b":"y"}}`)},
		{"kinds change", featureCollection(
			`{"type":"Feature","properties":{"a":"1","b":1}}`,
			`{"type":"Feature","properties":{"a":1,"b":"1"}}`,
			`{"type":"Feature","properties":{"a":"1","b":-0}}`,
			`{"type":"Feature","properties":{"a":null,"b":0}}`)},
		{"names compared in place", featureCollection(
			`{"type":"Feature","properties":{"ab":1,"c":"x"}}`,
			`{"type":"Feature","properties":{"abc":1,"c":"x"}}`, // longer
			`{"type":"Feature","properties":{"ab":2,"c":"x"}}`,
			`{"type":"Feature","properties":{"a":3,"c":"x"}}`,       // shorter
			`{"type":"Feature","properties":{"a\u0062":4,"c":"y"}}`, // the same name, escaped
			`{"type":"Feature","properties":{"ab" :5,"c":"y"}}`,
			`{"type":"Feature","properties":{"ab":6,"c\"":"y"}}`, // one not written as is
			`{"type":"Feature","properties":{"ab":7,"c\"":"z"}}`,
			`{"type":"Feature","properties":{"ab":8,"c":"z","d":1}}`,
			`{"type":"Feature","properties":{"c":9,"ab":"z"}}`, // the names swapped
			`{"type":"Feature","properties":{"\u00e9":10,"ab":"z"}}`,
			`{"type":"Feature","properties":{"\u00e9":11,"ab":"z","ab":1}}`,
			`{"type":"Feature","properties":{"a\\":12}}`,    // a\ ...
			`{"type":"Feature","properties":{"a\":1,":13}}`, // ... and a\":1, whose bytes start alike
			`{"type":"Feature","properties":{"ab":14,"ab`,   // cut off in a name
		)},
		{"wrong type after an id", featureCollection(
			`{"type":"Feature","id":"bad","geometry":null,"properties":{"a":"x"},"type":5}`,
			`{"type":"Feature","id":"good","geometry":null,"properties":{"a":"x"}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, chunk := range []int{1, 7, 1 << 20} {
				if err := diff(tt.doc, false, chunk); err != nil {
					t.Errorf("chunks of %d: %v", chunk, err)
				}
			}
		})
	}
}
