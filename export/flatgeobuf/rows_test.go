package flatgeobuf

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// rowList is a store.RowSource over features, their properties as values in the
// order of cols.
type rowList struct {
	fs   []*spatial.Feature
	cols []store.Column
}

func (r *rowList) Next() (*spatial.Feature, error) {
	panic("a writer took a row source's features by name")
}

func (r *rowList) NextRow() (*store.FeatureRow, error) {
	if len(r.fs) == 0 {
		return nil, io.EOF
	}
	f := r.fs[0]
	r.fs = r.fs[1:]
	vals := make([]any, len(r.cols))
	for i, c := range r.cols {
		vals[i] = f.Properties[c.Name]
	}
	return &store.FeatureRow{ID: f.ID, Geometry: f.Geometry, Values: vals}, nil
}

// TestWriteRows: a store.RowSource is read by rows, and makes the same file as its
// features by name.
func TestWriteRows(t *testing.T) {
	fs := features(3000, parcel)
	fs[7].Geometry, fs[9].Properties["name"] = nil, nil
	l := Layer{Name: "parcels", SRID: 4326, Columns: parcelColumns}
	dir := t.TempDir()
	byName, byRow := filepath.Join(dir, "a.fgb"), filepath.Join(dir, "b.fgb")
	if _, err := Write(context.Background(), byName, l, sliceSource(fs), nil); err != nil {
		t.Fatal(err)
	}
	n, err := Write(context.Background(), byRow, l, &rowList{fs: fs, cols: parcelColumns}, nil)
	if err != nil || n != int64(len(fs)) {
		t.Fatalf("wrote %d rows, %v; want %d", n, err, len(fs))
	}
	a, _ := os.ReadFile(byName)
	b, _ := os.ReadFile(byRow)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("by rows %d bytes, by name %d: not the same file", len(b), len(a))
	}
	short := &rowList{fs: fs[:1], cols: parcelColumns[:2]}
	if _, err := Write(context.Background(), byRow, l, short, nil); err == nil {
		t.Errorf("a row of 2 values for 4 columns: written")
	}
}
