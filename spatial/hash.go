package spatial

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"slices"
	"strconv"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

// hashVersion starts every canonical encoding, so that a future change of
// the encoding changes every hash instead of colliding with old ones.
const hashVersion = "geoflow-payload-v1\x00"

// PayloadHash is the SHA-256 of a canonical encoding of f's geometry and
// properties; f.ID is not part of it, so the same payload delivered twice
// (overlapping bbox tiles, unstable paging) hashes alike.
//
// The geometry is encoded as little-endian WKB (orb/encoding/wkb), a nil
// geometry as its own marker. Properties are taken in name order. Values are
// tagged by kind so that nil, "" and "0" differ:
//   - numbers of any Go type (and json.Number) are normalised, so 1, 1.0,
//     int64(1) and float32(1) hash alike; -0 hashes as 0;
//   - strings as they are, bools as such;
//   - nested map[string]any in key order; arrays ([]any, []string ...) in
//     their own order, since element order is data;
//   - an orb.Geometry value as its WKB;
//   - anything else as its fmt %v text with its type name.
//
// A nil f hashes like a feature with no geometry and no properties.
func PayloadHash(f *Feature) [32]byte {
	h := sha256.New()
	h.Write([]byte(hashVersion))
	e := hashEncoder{h: h}
	var g orb.Geometry
	var props map[string]any
	if f != nil {
		g, props = f.Geometry, f.Properties
	}
	e.geometry(g)
	e.object(props)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

type hashEncoder struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64 + 1]byte
}

func (e *hashEncoder) tag(t byte) { e.h.Write([]byte{t}) }

func (e *hashEncoder) uvarint(n uint64) {
	k := binary.PutUvarint(e.buf[:], n)
	e.h.Write(e.buf[:k])
}

func (e *hashEncoder) str(t byte, s string) {
	e.tag(t)
	e.uvarint(uint64(len(s)))
	e.h.Write([]byte(s))
}

func (e *hashEncoder) geometry(g orb.Geometry) {
	if g == nil {
		e.tag('0')
		return
	}
	b, err := wkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		// A type WKB cannot carry; still deterministic.
		e.str('X', fmt.Sprintf("%T:%v", g, g))
		return
	}
	e.tag('G')
	e.uvarint(uint64(len(b)))
	e.h.Write(b)
}

func (e *hashEncoder) object(m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.tag('{')
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str('k', k)
		e.value(m[k])
	}
}

func (e *hashEncoder) value(v any) {
	switch v := v.(type) {
	case nil:
		e.tag('n')
	case bool:
		if v {
			e.tag('t')
		} else {
			e.tag('f')
		}
	case string:
		e.str('s', v)
	case float64:
		e.str('d', canonFloat(v))
	case float32:
		e.str('d', canonFloat(float64(v)))
	case int:
		e.str('d', strconv.FormatInt(int64(v), 10))
	case int8:
		e.str('d', strconv.FormatInt(int64(v), 10))
	case int16:
		e.str('d', strconv.FormatInt(int64(v), 10))
	case int32:
		e.str('d', strconv.FormatInt(int64(v), 10))
	case int64:
		e.str('d', strconv.FormatInt(v, 10))
	case uint:
		e.str('d', strconv.FormatUint(uint64(v), 10))
	case uint8:
		e.str('d', strconv.FormatUint(uint64(v), 10))
	case uint16:
		e.str('d', strconv.FormatUint(uint64(v), 10))
	case uint32:
		e.str('d', strconv.FormatUint(uint64(v), 10))
	case uint64:
		e.str('d', strconv.FormatUint(v, 10))
	case json.Number:
		e.str('d', canonJSONNumber(v))
	case map[string]any:
		e.object(v)
	case []any:
		e.tag('[')
		e.uvarint(uint64(len(v)))
		for _, x := range v {
			e.value(x)
		}
	case []string:
		e.tag('[')
		e.uvarint(uint64(len(v)))
		for _, x := range v {
			e.str('s', x)
		}
	case []float64:
		e.tag('[')
		e.uvarint(uint64(len(v)))
		for _, x := range v {
			e.str('d', canonFloat(x))
		}
	case orb.Geometry:
		e.geometry(v)
	default:
		e.str('x', fmt.Sprintf("%T:%v", v, v))
	}
}

// canonFloat writes integral values without exponent or fraction, so that
// they match the integer types' decimal form.
func canonFloat(f float64) string {
	switch {
	case f == 0:
		return "0" // also -0
	case math.IsNaN(f) || math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'g', -1, 64)
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func canonJSONNumber(n json.Number) string {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return canonFloat(f)
	}
	return s
}
