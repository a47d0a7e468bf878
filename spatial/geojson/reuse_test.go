package geojson

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// readClones reads doc to the end, cloning each feature's properties and geometry as it
// arrives (a caller done with each feature before the next), and what happened to each
// feature in order (stored with its id, or refused with its error). The map pointers are the properties', the feature pointers the
// Features' themselves.
func readClones(t *testing.T, r spatial.Reader) (props []map[string]any, geoms []orb.Geometry, events []string, ptrs []uintptr, feats map[*spatial.Feature]bool) {
	t.Helper()
	feats = map[*spatial.Feature]bool{}
	for {
		f, err := r.Next()
		if err == io.EOF {
			return props, geoms, events, ptrs, feats
		}
		var fe *spatial.FeatureError
		if errors.As(err, &fe) {
			events = append(events, fe.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		props = append(props, maps.Clone(f.Properties))
		geoms = append(geoms, orb.Clone(f.Geometry))
		events = append(events, "stored "+f.ID)
		ptrs = append(ptrs, reflect.ValueOf(f.Properties).Pointer())
		feats[f] = true
	}
}

// TestReuseFeatures reads documents with and without ReuseFeatures: each feature's
// properties are the same as it arrives (keys of the feature before it are gone; a null,
// missing or repeated "properties" is read as without reuse; a refused feature in
// between changes nothing), and with reuse one map serves every feature that has
// properties and one Feature every feature.
func TestReuseFeatures(t *testing.T) {
	docs := map[string]string{
		"varied": `{"type":"FeatureCollection","features":[
			{"type":"Feature","id":"a","geometry":null,"properties":{"x":1,"s":"one","n":{"k":[1,"2"]}}},
			{"type":"Feature","id":"b","geometry":null,"properties":{"y":true,"s":"two"}},
			{"type":"Feature","id":"c","geometry":null,"properties":null},
			{"type":"Feature","id":"d","geometry":null},
			{"type":"Feature","id":"e","geometry":{"type":"Point","coordinates":[1]},"properties":{"bad":1}},
			{"type":"Feature","id":"f","geometry":null,"properties":{"s":"a","s":"b","z":null}},
			{"type":"Feature","id":"g","geometry":null,"properties":{"a":1},"properties":{"b":2}},
			{"type":"Feature","id":"h","geometry":null,"properties":{"s":"three","x":1}},
			{"type":"Feature","id":"i","geometry":{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,0]],[[1,1],[2,1],[2,2],[1,1]]]},"properties":{}},
			{"type":"Feature","id":"j","geometry":{"type":"MultiPolygon","coordinates":[[[[5,5],[6,5],[6,6],[5,5]]],[[[7,7],[8,7],[8,8],[7,7]],[[7.1,7.1],[7.2,7.1],[7.2,7.2],[7.1,7.1]]]]}},
			{"type":"Feature","id":"k","geometry":{"type":"GeometryCollection","geometries":[{"type":"LineString","coordinates":[[9,9],[10,10]]},{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}]}},
			{"type":"Feature","id":"l","geometry":{"type":"LineString","coordinates":[[1,2],[3,4],[5,6]]},"geometry":{"type":"MultiPoint","coordinates":[[7,8]]}},
			{"type":"Feature","id":"m","geometry":{"type":"MultiLineString","coordinates":[[[1,1],[2,2]],[[3,3],[4,4],[5,5]]]}},
			{"type":"Feature","id":"n","geometry":{"type":"Point","coordinates":[1,2]}},
			{"type":"Feature","id":"o","geometry":{"type":"Polygon","coordinates":[]}}]}`,
	}
	// The arenas are still empty at the first feature: an empty polygon there too.
	docs["empty first"] = `{"type":"FeatureCollection","features":[{"type":"Feature","id":"a","geometry":{"type":"Polygon","coordinates":[]}}]}`
	fixture, _ := wfsFixtureDoc(t, 300)
	docs["fixture"] = string(fixture)
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			want, wantGeoms, wantEvents, fresh, _ := readClones(t, NewReader(strings.NewReader(doc), Options{}))
			r := NewReader(bytes.NewReader([]byte(doc)), Options{})
			r.ReuseFeatures()
			got, geoms, events, reused, feats := readClones(t, r)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(events, wantEvents) {
				t.Fatalf("with reuse:\n%v\n%v\nwithout:\n%v\n%v", got, events, want, wantEvents)
			}
			// DeepEqual tells a nil polygon from an empty one, as the payload hash does.
			if !reflect.DeepEqual(geoms, wantGeoms) {
				t.Fatalf("geometries with reuse:\n%v\nwithout:\n%v", geoms, wantGeoms)
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
			if len(feats) != 1 {
				t.Errorf("with reuse %d Features for %d features, want 1", len(feats), len(reused))
			}
		})
	}
}
