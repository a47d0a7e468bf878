package postgis

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	orbwkb "github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/wkb"
	"github.com/geoflow/geoflow/store"
)

// bytesCell is a bytea value of the staging row that is rewritten in place for every
// feature: pgx takes it as a pgtype.BytesValuer, so the row holds the same pointer
// throughout and no feature boxes a new slice.
type bytesCell struct{ b []byte }

// BytesValue implements pgtype.BytesValuer.
func (c *bytesCell) BytesValue() ([]byte, error) { return c.b, nil }

// Boxed once: a boolean column's text costs no allocation per feature.
var trueText, falseText any = "true", "false"

// rowBuilder builds the staging rows of one COPY, reusing the row, the hash, the WKB and
// the text of numeric values from feature to feature: pgx encodes each row before it
// asks for the next (pgx.CopyFromSource), so nothing of a row needs to outlive it.
type rowBuilder struct {
	row  []any
	hash [32]byte
	hc   bytesCell
	wc   bytesCell
	wkb  []byte
	text []byte
}

// build returns f's staging row in the order of stagingColumns, valid until the next call.
func (r *rowBuilder) build(f *spatial.Feature, t *store.FeatureTable) ([]any, error) {
	n := 3 + len(t.Columns)
	if t.Keyed() {
		n++
	}
	if cap(r.row) < n {
		r.row = make([]any, n)
	}
	row := r.row[:n]
	clear(row)
	r.hash = spatial.SourceHash(f)
	if t.Keyed() {
		key, err := store.FeatureKey(f, t, r.hash)
		if err != nil {
			return nil, err
		}
		row[n-1] = key
	}
	if f.ID != "" {
		row[0] = f.ID
	}
	r.hc.b = r.hash[:]
	row[1] = &r.hc
	if f.Geometry != nil {
		b, err := wkb.Append(r.wkb[:0], f.Geometry, wkb.Options{})
		if err != nil {
			// A type spatial/wkb does not write: as orb/encoding/wkb writes it, or its error.
			if b, err = orbwkb.Marshal(f.Geometry, binary.LittleEndian); err != nil {
				return nil, fmt.Errorf("feature %q: encoding its geometry: %w", f.ID, err)
			}
		} else {
			r.wkb = b
		}
		r.wc.b = b
		row[2] = &r.wc
	}
	r.text = r.text[:0]
	for i, c := range t.Columns {
		v, ok := f.Properties[c.Property]
		if !ok || v == nil {
			continue
		}
		cell, err := r.cell(v, c.Type)
		if err != nil {
			return nil, &store.PropertyError{FeatureID: f.ID, Property: c.Property, Type: c.Type, Value: fmt.Sprint(v)}
		}
		row[3+i] = cell
	}
	return row, nil
}

// cell is v's staging text for a column of type t as store.ColumnText renders it (an
// empty text stays an empty text, not NULL), without a new allocation where it can: a string that needs no change is v
// itself, a boolean a text boxed once, a number's text a slice of r.text.
func (r *rowBuilder) cell(v any, t store.ColumnType) (any, error) {
	switch x := v.(type) {
	case string:
		s, err := store.ColumnText(v, t) // v, not x: boxing x again would allocate
		switch {
		case err != nil:
			return nil, err
		case s == x:
			return v, nil
		}
		return boxText(s), nil
	case float64:
		if t == store.TypeBigint && x == math.Trunc(x) && math.Abs(x) <= 1<<63 {
			// ColumnText's FormatInt of an integral float (an integer read from JSON).
			return r.appendText(strconv.AppendInt(r.text, int64(x), 10)), nil
		}
		if t != store.TypeBigint && t != store.TypeBoolean {
			// ColumnText's FormatFloat, which ParseFloat always reads back.
			return r.appendText(strconv.AppendFloat(r.text, x, 'f', -1, 64)), nil
		}
	case int64:
		if t != store.TypeBoolean {
			return r.appendText(strconv.AppendInt(r.text, x, 10)), nil
		}
	case bool:
		if t != store.TypeBigint && t != store.TypeDouble && t != store.TypeNumeric {
			return boxText(strconv.FormatBool(x)), nil
		}
	}
	s, err := store.ColumnText(v, t)
	if err != nil {
		return nil, err
	}
	return boxText(s), nil
}

// appendText keeps b, which extends r.text, as r.text and returns the part appended.
func (r *rowBuilder) appendText(b []byte) []byte {
	start := len(r.text)
	r.text = b
	return b[start:len(b):len(b)]
}

func boxText(s string) any {
	switch s {
	case "true":
		return trueText
	case "false":
		return falseText
	}
	return s
}
