package postgis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/paulmach/orb"
	orbwkb "github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// TestRowBuilderCellIsColumnText holds the staging row's text to store.ColumnText for
// every kind of value a reader yields and every column type: the same text (an empty
// string stays an empty text: it is not NULL, which a filter tells apart), and an error
// where ColumnText refuses.
func TestRowBuilderCellIsColumnText(t *testing.T) {
	types := []store.ColumnType{store.TypeText, store.TypeBigint, store.TypeDouble, store.TypeNumeric,
		store.TypeBoolean, store.TypeDate, store.TypeTimestamptz}
	values := []struct {
		name string
		v    any
	}{
		{"string", "Wohngebiet"}, {"padded string", " 12 "}, {"empty string", ""}, {"numeric string", "1234.50"},
		{"integral string", "42"}, {"boolean string", "yes"}, {"date string", "2019-04-01"},
		{"float", 1234.5}, {"integral float", 42.0}, {"negative zero", math.Copysign(0, -1)}, {"NaN", math.NaN()},
		{"infinity", math.Inf(1)}, {"huge float", 1e300}, {"int64", int64(-7)}, {"int64 one", int64(1)},
		{"int", 3}, {"true", true}, {"false", false}, {"json number", json.Number("2.50")},
		{"time", time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)}, {"nested", map[string]any{"a": 1.0}},
	}
	var r rowBuilder
	for _, v := range values {
		for _, typ := range types {
			t.Run(v.name+"/"+string(typ), func(t *testing.T) {
				want, wantErr := store.ColumnText(v.v, typ)
				got, err := r.cell(v.v, typ)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("error %v, ColumnText's %v", err, wantErr)
				}
				var text string
				switch g := got.(type) {
				case nil:
				case string:
					text = g
				case []byte:
					text = string(g)
				default:
					t.Fatalf("cell is a %T", got)
				}
				if text != want || (got == nil) != (wantErr != nil) {
					t.Errorf("cell %#v, ColumnText %q", got, want)
				}
			})
		}
	}
}

// TestRowBuilderRow checks a whole row: the id, the payload hash, the WKB as
// orb/encoding/wkb writes it, and a row reused for the next feature.
func TestRowBuilderRow(t *testing.T) {
	ring := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 0}}
	fs := []*spatial.Feature{
		{ID: "a.1", Geometry: orb.Polygon{ring}, Properties: map[string]any{"n": 1.5, "s": "x"}},
		{ID: "", Geometry: orb.Point{1, 2}, Properties: map[string]any{"n": int64(2)}},
		{ID: "a.3", Geometry: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}, Properties: map[string]any{}},
		{ID: "a.4", Properties: map[string]any{"s": ""}},
	}
	table := &store.FeatureTable{Name: "t", Columns: []store.Column{{Name: "n", Property: "n", Type: store.TypeDouble},
		{Name: "s", Property: "s", Type: store.TypeText}}}
	var r rowBuilder
	for _, f := range fs {
		t.Run(f.ID, func(t *testing.T) {
			row, err := r.build(f, table)
			if err != nil {
				t.Fatal(err)
			}
			if f.ID == "" && row[0] != nil || f.ID != "" && row[0] != f.ID {
				t.Errorf("id %#v", row[0])
			}
			hash := spatial.PayloadHash(f)
			if h, _ := row[1].(*bytesCell).BytesValue(); !bytes.Equal(h, hash[:]) {
				t.Errorf("hash %x, want %x", h, hash)
			}
			if f.Geometry == nil {
				if row[2] != nil {
					t.Errorf("wkb %#v for no geometry", row[2])
				}
				return
			}
			want, err := orbwkb.Marshal(f.Geometry, binary.LittleEndian)
			if err != nil {
				t.Fatal(err)
			}
			if w, _ := row[2].(*bytesCell).BytesValue(); !bytes.Equal(w, want) {
				t.Errorf("wkb %x, want %x", w, want)
			}
		})
	}
}
