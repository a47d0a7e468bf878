package postgis

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// TestCopyReader reads one stream in reads of several sizes: each gives the same bytes,
// the header, a tuple per feature and the trailer, whatever the rows' sizes.
func TestCopyReader(t *testing.T) {
	big := make(orb.LineString, 10_000) // a row larger than one Read
	fs := []*spatial.Feature{
		{ID: "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"name": "x"}},
		{ID: "b", Geometry: big},
		{ID: "", Properties: map[string]any{"name": ""}},
	}
	table := &store.FeatureTable{Name: "t", Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	want := []byte(copyHeader)
	for _, f := range fs {
		var err error
		if want, err = rowOf(want, f, table); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, 0xff, 0xff)
	for _, size := range []int{1, 7, 4096, 65531, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			src := features(fs)
			r := &copyReader{src: &copySource{src: &src, table: table}, buf: []byte(copyHeader)}
			var got []byte
			p := make([]byte, size)
			for {
				n, err := r.Read(p)
				got = append(got, p[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("read %d bytes, want %d, or not the same", len(got), len(want))
			}
		})
	}
}
