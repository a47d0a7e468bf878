package geojson

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/paulmach/orb"
)

func TestCollectionWriter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		write   func(c *CollectionWriter) error
		members any
		want    string
	}{
		{"empty", func(*CollectionWriter) error { return nil }, nil, `{"type":"FeatureCollection","features":[]}`},
		{"two features and members", func(c *CollectionWriter) error {
			if err := c.Feature("a.1", orb.Point{1, 2}, map[string]any{"n": 1}); err != nil {
				return err
			}
			return c.Feature(nil, nil, nil)
		}, map[string]any{"numberReturned": 2},
			`{"type":"FeatureCollection","features":[{"type":"Feature","id":"a.1","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":1}},{"type":"Feature","geometry":null,"properties":null}],"numberReturned":2}`},
		{"empty members", func(*CollectionWriter) error { return nil }, struct{}{}, `{"type":"FeatureCollection","features":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			c := NewCollectionWriter(&b)
			if err := tc.write(c); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(tc.members); err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b.String())
			}
			json.Unmarshal([]byte(tc.want), &want)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if !bytes.Equal(gb, wb) {
				t.Fatalf("got %s\nwant %s", gb, wb)
			}
		})
	}
	var b bytes.Buffer
	c := NewCollectionWriter(&b)
	if err := c.Feature(1, orb.Point{0, 0}, func() {}); err == nil {
		t.Fatal("properties that do not marshal: no error")
	}
	if err := c.Close([]int{1}); err == nil {
		t.Fatal("members that are no object: no error")
	}
}
