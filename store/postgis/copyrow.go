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

// appendRow appends f's staging row to b as one binary COPY tuple, in the order of
// stagingColumns: the id (text, NULL when empty), the payload hash, the WKB (NULL for no
// geometry), each column's text as store.ColumnText renders it, and the key of a keyed
// table. hash is f's source hash (spatial.Hasher.Source); p holds the properties of t's
// columns and the WKB the hash wrote, if it did (spatial.Hasher.Pick). Everything is written
// straight into b, so a feature costs no staging value of its own. On an error b is
// returned as it was.
func appendRow(b []byte, f *spatial.Feature, hash [32]byte, p *spatial.Picker, t *store.FeatureTable) ([]byte, error) {
	start := len(b)
	n := 3 + len(t.Columns)
	if t.Keyed() {
		n++
	}
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	if f.ID != "" {
		b = appendCopyText(b, f.ID)
	} else {
		b = appendCopyNull(b)
	}
	b = appendCopyBytes(b, hash[:])
	var err error
	if b, err = appendCopyWKB(b, f, p.WKB()); err != nil {
		return b[:start], err
	}
	vals := p.Values()
	for i, c := range t.Columns {
		v := vals[i]
		if v == nil {
			b = appendCopyNull(b)
			continue
		}
		if b, err = appendCell(b, v, c.Type); err != nil {
			return b[:start], &store.PropertyError{FeatureID: f.ID, Property: c.Property, Type: c.Type, Value: fmt.Sprint(v)}
		}
	}
	if t.Keyed() {
		key, err := store.FeatureKey(f, t, hash)
		if err != nil {
			return b[:start], err
		}
		b = appendCopyText(b, key)
	}
	return b, nil
}

// appendCopyWKB appends f's geometry as a bytea field: its WKB as orb/encoding/wkb
// writes it (w, when not nil), NULL when f has none.
func appendCopyWKB(b []byte, f *spatial.Feature, w []byte) ([]byte, error) {
	if f.Geometry == nil {
		return appendCopyNull(b), nil
	}
	if w != nil {
		return appendCopyBytes(b, w), nil
	}
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	w, err := wkb.Append(b, f.Geometry, wkb.Options{})
	if err != nil {
		// A type spatial/wkb does not write: as orb/encoding/wkb writes it, or its error.
		m, err := orbwkb.Marshal(f.Geometry, binary.LittleEndian)
		if err != nil {
			return b[:at], fmt.Errorf("feature %q: encoding its geometry: %w", f.ID, err)
		}
		w = append(b[:at+4], m...)
	}
	return endField(w, at), nil
}

// appendCell appends v's staging text for a column of type t as a text field, the
// text store.ColumnText renders (an empty text stays an empty text, not NULL), without
// a string of its own where it can: a string that needs no change and a number's digits
// are written as they are. On an error b is returned as it was.
func appendCell(b []byte, v any, t store.ColumnType) ([]byte, error) {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	switch x := v.(type) {
	case string:
		if t == store.TypeText {
			// ColumnText's text is the string itself.
			return endField(append(b, x...), at), nil
		}
	case float64:
		if t == store.TypeBigint && x == math.Trunc(x) && math.Abs(x) <= 1<<63 {
			// ColumnText's FormatInt of an integral float (an integer read from JSON).
			return endField(strconv.AppendInt(b, int64(x), 10), at), nil
		}
		if t != store.TypeBigint && t != store.TypeBoolean {
			// ColumnText's FormatFloat, which ParseFloat always reads back.
			return endField(strconv.AppendFloat(b, x, 'f', -1, 64), at), nil
		}
	case int64:
		if t != store.TypeBoolean {
			return endField(strconv.AppendInt(b, x, 10), at), nil
		}
	case bool:
		if t != store.TypeBigint && t != store.TypeDouble && t != store.TypeNumeric {
			return endField(strconv.AppendBool(b, x), at), nil
		}
	}
	s, err := store.ColumnText(v, t)
	if err != nil {
		return b[:at], err
	}
	return endField(append(b, s...), at), nil
}

// endField writes the length of the field that starts at b[at] (its 4-byte length, then
// its bytes) into that length.
func endField(b []byte, at int) []byte {
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func appendCopyText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendCopyBytes(b, v []byte) []byte {
	if v == nil {
		return appendCopyNull(b)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func appendCopyNull(b []byte) []byte { return binary.BigEndian.AppendUint32(b, 0xffffffff) }
