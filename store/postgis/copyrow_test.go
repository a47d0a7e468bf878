package postgis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/paulmach/orb"
	orbwkb "github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// TestAppendCellIsColumnText holds the staging row's text to store.ColumnText for
// every kind of value a reader yields and every column type: the same text (an empty
// string stays an empty text: it is not NULL, which a filter tells apart), and an error
// where ColumnText refuses.
func TestAppendCellIsColumnText(t *testing.T) {
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
	for _, v := range values {
		for _, typ := range types {
			t.Run(v.name+"/"+string(typ), func(t *testing.T) {
				want, wantErr := store.ColumnText(v.v, typ)
				prefix := []byte("row so far")
				got, err := appendCell(prefix, v.v, typ)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("error %v, ColumnText's %v", err, wantErr)
				}
				if err != nil {
					if string(got) != "row so far" {
						t.Errorf("after an error the row is %q, want it as it was", got)
					}
					return
				}
				fields, rest := copyFields(t, got[len(prefix):], 1)
				if len(rest) != 0 || fields[0] == nil || string(fields[0]) != want {
					t.Errorf("field %q (and %d bytes after it), ColumnText %q", fields[0], len(rest), want)
				}
			})
		}
	}
}

// copyFields splits b into n binary COPY fields (a 4-byte length, then that many bytes;
// a length of -1 is NULL, returned as nil) and returns them and what follows.
func copyFields(t *testing.T, b []byte, n int) ([][]byte, []byte) {
	t.Helper()
	fields := make([][]byte, n)
	for i := range fields {
		if len(b) < 4 {
			t.Fatalf("field %d: %d bytes left, want a length", i, len(b))
		}
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if l == -1 {
			continue
		}
		if l < 0 || int(l) > len(b) {
			t.Fatalf("field %d: length %d with %d bytes left", i, l, len(b))
		}
		fields[i], b = b[:l:l], b[l:]
	}
	return fields, b
}

// copyTuple splits one binary COPY tuple (its field count, then its fields) off b.
func copyTuple(t *testing.T, b []byte) ([][]byte, []byte) {
	t.Helper()
	if len(b) < 2 {
		t.Fatalf("%d bytes, want a field count", len(b))
	}
	return copyFields(t, b[2:], int(binary.BigEndian.Uint16(b)))
}

// TestAppendRow checks whole tuples: the field count, the id (NULL when empty), the
// payload hash, the WKB as orb/encoding/wkb writes it, each column's text (NULL for a
// missing or null property) and the key of a keyed table; and that a feature whose
// property the column cannot take leaves the buffer as it was.
func TestAppendRow(t *testing.T) {
	ring := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 0}}
	fs := []*spatial.Feature{
		{ID: "a.1", Geometry: orb.Polygon{ring}, Properties: map[string]any{"n": 1.5, "s": "x"}},
		{ID: "", Geometry: orb.Point{1, 2}, Properties: map[string]any{"n": int64(2), "s": nil}},
		{ID: "a.3", Geometry: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}, Properties: map[string]any{}},
		{ID: "a.4", Properties: map[string]any{"s": ""}},
		// A hash a transform kept: the row's WKB is the geometry's, not the hash's.
		{ID: "a.5", Geometry: orb.MultiPoint{{1, 2}}, Properties: map[string]any{"n": 3.0}, Hash: &[32]byte{5}},
	}
	table := &store.FeatureTable{Name: "t", Columns: []store.Column{{Name: "n", Property: "n", Type: store.TypeDouble},
		{Name: "s", Property: "s", Type: store.TypeText}}}
	keyed := *table
	keyed.Mode = store.ModeMirror // keyed on the id, else the payload hash
	var b []byte
	for _, f := range fs {
		for _, tbl := range []*store.FeatureTable{table, &keyed} {
			t.Run(fmt.Sprintf("%s/keyed=%v", f.ID, tbl.Keyed()), func(t *testing.T) {
				var err error
				if b, err = rowOf(b[:0], f, tbl); err != nil {
					t.Fatal(err)
				}
				row, rest := copyTuple(t, b)
				nfields := 5
				if tbl.Keyed() {
					nfields++
				}
				if len(row) != nfields || len(rest) != 0 {
					t.Fatalf("%d fields and %d bytes after them, want %d fields", len(row), len(rest), nfields)
				}
				if (row[0] == nil) != (f.ID == "") || string(row[0]) != f.ID {
					t.Errorf("id %q", row[0])
				}
				if hash := new(spatial.Hasher).Source(f); !bytes.Equal(row[1], hash[:]) {
					t.Errorf("hash %x, want %x", row[1], hash)
				}
				for i, c := range table.Columns {
					want, _ := store.ColumnText(f.Properties[c.Property], c.Type)
					if v := f.Properties[c.Property]; v == nil && row[3+i] != nil || v != nil && string(row[3+i]) != want {
						t.Errorf("column %s: %q, want %q (NULL: %v)", c.Name, row[3+i], want, v == nil)
					}
				}
				if tbl.Keyed() {
					key, err := store.FeatureKey(f, tbl, new(spatial.Hasher).Source(f))
					if err != nil || string(row[5]) != key {
						t.Errorf("key %q, want %q (%v)", row[5], key, err)
					}
				}
				if f.Geometry == nil {
					if row[2] != nil {
						t.Errorf("wkb %x for no geometry", row[2])
					}
					return
				}
				want, err := orbwkb.Marshal(f.Geometry, binary.LittleEndian)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(row[2], want) {
					t.Errorf("wkb %x, want %x", row[2], want)
				}
			})
		}
	}
	t.Run("a property the column cannot take", func(t *testing.T) {
		f := &spatial.Feature{ID: "bad", Geometry: orb.Point{1, 2}, Properties: map[string]any{"n": "many", "s": "x"}}
		got, err := rowOf([]byte("rows before"), f, table)
		var pe *store.PropertyError
		if !errors.As(err, &pe) || pe.Property != "n" || pe.FeatureID != "bad" {
			t.Errorf("error %v, want a PropertyError for n of bad", err)
		}
		if string(got) != "rows before" {
			t.Errorf("buffer %q after the error, want it as it was", got)
		}
	})
}

// TestAppendRowWire holds one tuple to its bytes: the field count, then each field's
// length and bytes, -1 for NULL, big-endian as COPY's binary format has them.
func TestAppendRowWire(t *testing.T) {
	f := &spatial.Feature{ID: "ab", Properties: map[string]any{"s": ""}}
	table := &store.FeatureTable{Name: "t", Columns: []store.Column{{Name: "s", Property: "s", Type: store.TypeText},
		{Name: "m", Property: "m", Type: store.TypeText}}}
	got, err := rowOf(nil, f, table)
	if err != nil {
		t.Fatal(err)
	}
	hash := spatial.PayloadHash(f)
	want := []byte{0, 5, 0, 0, 0, 2, 'a', 'b', 0, 0, 0, 32}
	want = append(want, hash[:]...)
	want = append(want, 255, 255, 255, 255 /* no geometry */, 0, 0, 0, 0 /* "" */, 255, 255, 255, 255 /* m missing */)
	if !bytes.Equal(got, want) {
		t.Errorf("tuple\n%v, want\n%v", got, want)
	}
}

// rowOf is appendRow of f with the hash and the columns' values copySource gives it.
func rowOf(b []byte, f *spatial.Feature, t *store.FeatureTable) ([]byte, error) {
	p := t.Picker()
	hash := new(spatial.Hasher).Pick(f, p)
	return appendRow(b, f, hash, p, t)
}
