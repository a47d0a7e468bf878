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

func TestAppendCopyRow(t *testing.T) {
	tests := []struct {
		name    string
		row     []any
		want    []byte
		wantErr bool
	}{
		{"empty row", nil, []byte{0, 0}, false},
		{"NULLs", []any{nil, []byte(nil), &bytesCell{}}, []byte{0, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, false},
		{"text", []any{"ab", ""}, []byte{0, 2, 0, 0, 0, 2, 'a', 'b', 0, 0, 0, 0}, false},
		{"bytes", []any{[]byte{1, 2, 3}, &bytesCell{b: []byte{9}}, []byte{}}, []byte{0, 3, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 1, 9, 0, 0, 0, 0}, false},
		{"a type staging rows never hold", []any{"a", 1.5}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendCopyRow(nil, tt.row)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if !tt.wantErr && !bytes.Equal(got, tt.want) {
				t.Errorf("appendCopyRow = %v, want %v", got, tt.want)
			}
		})
	}
}

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
	var want []byte
	var rb rowBuilder
	want = append(want, copyHeader...)
	for _, f := range fs {
		row, err := rb.build(f, table)
		if err != nil {
			t.Fatal(err)
		}
		if want, err = appendCopyRow(want, row); err != nil {
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
