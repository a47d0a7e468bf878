package geojson

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

// readClones reads doc to the end, cloning each feature's properties as it arrives (a
// caller done with each feature before the next), and the errors of refused features.
func readClones(t *testing.T, r spatial.Reader) ([]map[string]any, []string, []uintptr) {
	t.Helper()
	var props []map[string]any
	var refused []string
	var ptrs []uintptr
	for {
		f, err := r.Next()
		if err == io.EOF {
			return props, refused, ptrs
		}
		var fe *spatial.FeatureError
		if errors.As(err, &fe) {
			refused = append(refused, fe.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		props = append(props, maps.Clone(f.Properties))
		ptrs = append(ptrs, reflect.ValueOf(f.Properties).Pointer())
	}
}

// TestReuseProperties reads documents with and without ReuseProperties: each feature's
// properties are the same as it arrives (keys of the feature before it are gone; a null,
// missing or repeated "properties" is read as without reuse; a refused feature in
// between changes nothing), and with reuse one map serves every feature that has
// properties.
func TestReuseProperties(t *testing.T) {
	docs := map[string]string{
		"varied": `{"type":"FeatureCollection","features":[
			{"type":"Feature","id":"a","geometry":null,"properties":{"x":1,"s":"one","n":{"k":[1,"2"]}}},
			{"type":"Feature","id":"b","geometry":null,"properties":{"y":true,"s":"two"}},
			{"type":"Feature","id":"c","geometry":null,"properties":null},
			{"type":"Feature","id":"d","geometry":null},
			{"type":"Feature","id":"e","geometry":{"type":"Point","coordinates":[1]},"properties":{"bad":1}},
			{"type":"Feature","id":"f","geometry":null,"properties":{"s":"a","s":"b","z":null}},
			{"type":"Feature","id":"g","geometry":null,"properties":{"a":1},"properties":{"b":2}},
			{"type":"Feature","id":"h","geometry":null,"properties":{"s":"three","x":1}}]}`,
	}
	fixture, _ := wfsFixtureDoc(t, 300)
	docs["fixture"] = string(fixture)
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			want, wantRefused, fresh := readClones(t, NewReader(strings.NewReader(doc), Options{}))
			r := NewReader(bytes.NewReader([]byte(doc)), Options{})
			r.ReuseProperties()
			got, refused, reused := readClones(t, r)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(refused, wantRefused) {
				t.Fatalf("with reuse:\n%v\n%v\nwithout:\n%v\n%v", got, refused, want, wantRefused)
			}
			distinct := func(ps []uintptr) int {
				seen := map[uintptr]bool{}
				for _, p := range ps {
					seen[p] = true
				}
				return len(seen)
			}
			if n := distinct(fresh); n != len(fresh) {
				t.Errorf("without reuse %d maps for %d features", n, len(fresh))
			}
			if n := distinct(reused); n > 2 {
				// One map, and a new empty one for "properties": null.
				t.Errorf("with reuse %d maps for %d features, want at most 2", n, len(reused))
			}
		})
	}
}
