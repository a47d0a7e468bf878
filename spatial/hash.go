package spatial

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	orbwkb "github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial/wkb"
)

// hashVersion starts every canonical encoding, so that a future change of
// the encoding changes every hash instead of colliding with old ones.
const hashVersion = "geoflow-payload-v1\x00"

// PayloadHash is the SHA-256 of a canonical encoding of f's geometry and
// properties; f.ID is not part of it, so the same payload delivered twice
// (overlapping bbox tiles, unstable paging) hashes alike.
//
// The geometry is encoded as little-endian WKB (spatial/wkb with its zero
// Options, which write what orb/encoding/wkb writes), a nil geometry as its
// own marker. Properties are taken in name order. Values are tagged by kind so
// that nil, "" and "0" differ:
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
	// The encoding is appended to a buffer on the stack (spilling to the
	// heap only for large features) and hashed in one go: writing to a
	// hash.Hash interface makes everything written escape.
	var arr [4096]byte
	b := append(arr[:0], hashVersion...)
	var g orb.Geometry
	var props map[string]any
	if f != nil {
		g, props = f.Geometry, f.Properties
	}
	b = appendGeometry(b, g)
	b = appendValue(b, props)
	return sha256.Sum256(b)
}

// Hasher computes PayloadHash for a stream of features, as a store writes a page of one
// layer: features that mostly share their property names. It reuses one buffer for the
// canonical encoding (PayloadHash clears a fresh one on the stack at every call), and
// keeps the last feature's names in order to look each up in the next feature's
// properties, which costs less than gathering and sorting them again; a feature with
// other names is encoded the long way and its names kept. The hash is PayloadHash's,
// byte for byte. The zero Hasher is ready; one is not safe for concurrent use.
type Hasher struct {
	buf   []byte
	names []string // the last feature's property names, sorted
	vals  []any    // its values, in the order of names
	// layout changes whenever names does, so that a Picker knows when to find its
	// names among them again.
	layout uint64
	wkb    []byte // the last feature's WKB in buf, nil for none
}

// Sum is PayloadHash(f).
func (h *Hasher) Sum(f *Feature) [32]byte {
	if f == nil {
		return PayloadHash(nil)
	}
	b := append(h.buf[:0], hashVersion...)
	b = appendGeometry(b, f.Geometry)
	wkbAt, wkbEnd := 0, 0
	if b[len(hashVersion)] == 'G' {
		n, k := binary.Uvarint(b[len(hashVersion)+1:])
		wkbAt = len(hashVersion) + 1 + k
		wkbEnd = wkbAt + int(n)
	}
	b = h.appendProperties(b, f.Properties)
	h.buf, h.wkb = b, nil
	if wkbEnd > 0 {
		h.wkb = b[wkbAt:wkbEnd:wkbEnd]
	}
	return sha256.Sum256(b)
}

// appendProperties appends props as appendValue does, in the order of h.names when
// props has exactly those names, and keeps their values in h.vals.
func (h *Hasher) appendProperties(b []byte, props map[string]any) []byte {
	if len(props) == len(h.names) && len(props) > 0 {
		start := len(b)
		b = append(b, '{')
		b = binary.AppendUvarint(b, uint64(len(props)))
		for i, k := range h.names {
			v, ok := props[k]
			if !ok {
				b = b[:start]
				break
			}
			h.vals[i] = v
			b = appendStr(b, 'k', k)
			b = appendValue(b, v)
		}
		if len(b) > start {
			return b
		}
	}
	h.names = h.names[:0]
	for k := range props {
		h.names = append(h.names, k)
	}
	slices.Sort(h.names) // the order appendValue sorts properties in
	h.vals = h.vals[:0]
	for _, k := range h.names {
		h.vals = append(h.vals, props[k])
	}
	h.layout++
	return appendValue(b, props)
}

// Pick is Source(f), and also makes p.Values() the values of p's names in f's
// properties and p.WKB() f's geometry's WKB. A store writing a row per feature wants,
// besides the hash, the property of each of its columns and the geometry's WKB, and Sum
// has just looked every property up by name and written the WKB: they are taken from
// there rather than looked up and written again.
func (h *Hasher) Pick(f *Feature, p *Picker) [32]byte {
	if f == nil || f.Hash != nil {
		p.lookup(f)
		return h.Source(f)
	}
	sum := h.Sum(f)
	p.from(h)
	return sum
}

// Picker holds the values of a fixed list of property names for one feature at a
// time (Hasher.Pick). One is not safe for concurrent use.
type Picker struct {
	names []string
	vals  []any
	wkb   []byte
	// at[i] is where names[i] is in the names of h, as of h's layout; -1 where absent.
	at     []int
	h      *Hasher
	layout uint64
}

// NewPicker makes a Picker of names.
func NewPicker(names []string) *Picker {
	return &Picker{names: names, vals: make([]any, len(names)), at: make([]int, len(names))}
}

// Values are the values of the Picker's names in the properties of the feature last
// picked, in the order of the names, nil where it has none. They are valid until the
// next Pick.
func (p *Picker) Values() []any { return p.vals }

// WKB is the geometry of the feature last picked, when its hash was made of it (not kept
// by a transform), as the hash has it: spatial/wkb with its zero Options, or
// orb/encoding/wkb little-endian for a type that cannot write. It is nil for no
// geometry, a geometry WKB cannot carry, or a kept hash, and valid until the next Pick.
func (p *Picker) WKB() []byte { return p.wkb }

// lookup takes the values from f's properties.
func (p *Picker) lookup(f *Feature) {
	var props map[string]any
	if f != nil {
		props = f.Properties
	}
	for i, n := range p.names {
		p.vals[i] = props[n]
	}
	p.wkb = nil
}

// from takes the values from those h has just hashed.
func (p *Picker) from(h *Hasher) {
	if p.h != h || p.layout != h.layout {
		p.h, p.layout = h, h.layout
		for i, n := range p.names {
			if j, ok := slices.BinarySearch(h.names, n); ok {
				p.at[i] = j
			} else {
				p.at[i] = -1
			}
		}
	}
	for i, j := range p.at {
		if j < 0 {
			p.vals[i] = nil
		} else {
			p.vals[i] = h.vals[j]
		}
	}
	p.wkb = h.wkb
}

// Source is the payload hash a store keys f's row on: f.Hash where a transform kept the
// hash of the feature as received, else PayloadHash(f).
func (h *Hasher) Source(f *Feature) [32]byte {
	if f != nil && f.Hash != nil {
		return *f.Hash
	}
	return h.Sum(f)
}

func appendStr(b []byte, t byte, s string) []byte {
	b = append(b, t)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// withLen puts the uvarint length of b[start:] before it.
func withLen(b []byte, start int) []byte {
	var arr [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(arr[:], uint64(len(b)-start))
	b = append(b, arr[:l]...)
	copy(b[start+l:], b[start:len(b)-l])
	copy(b[start:], arr[:l])
	return b
}

func appendGeometry(b []byte, g orb.Geometry) []byte {
	if g == nil {
		return append(b, '0')
	}
	b = append(b, 'G')
	start := len(b)
	// The zero Options: nil slices write nothing and NaNs keep their bits, as
	// orb/encoding/wkb wrote them when the first hashes were stored.
	if w, err := wkb.Append(b, g, wkb.Options{}); err == nil {
		return withLen(w, start)
	}
	// A type wkb.Append does not know: as orb/encoding/wkb encodes it.
	b = b[:start-1]
	w, err := orbwkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		// A type WKB cannot carry; still deterministic.
		return appendStr(b, 'X', fmt.Sprintf("%T:%v", g, g))
	}
	b = append(b, 'G')
	b = binary.AppendUvarint(b, uint64(len(w)))
	return append(b, w...)
}

// appendFloat appends a number tagged 'd', as canonFloat writes it.
func appendFloat(b []byte, f float64) []byte {
	b = append(b, 'd', 0)
	return shortLen(appendCanonFloat(b, f), len(b))
}

func appendInt(b []byte, i int64) []byte {
	b = append(b, 'd', 0)
	return shortLen(strconv.AppendInt(b, i, 10), len(b))
}

func appendUint(b []byte, u uint64) []byte {
	b = append(b, 'd', 0)
	return shortLen(strconv.AppendUint(b, u, 10), len(b))
}

// shortLen puts the length of b[start:] into the byte reserved before it: the
// uvarint of a length under 128, as the decimal text of any number is, is that byte.
// withLen would move the text to make room.
func shortLen(b []byte, start int) []byte {
	n := len(b) - start
	if n >= 0x80 {
		return withLen(append(b[:start-1], b[start:]...), start-1)
	}
	b[start-1] = byte(n)
	return b
}

// appendNumber appends a number of any Go type tagged 'd', in the one decimal form
// that makes 1, 1.0, int64(1), float32(1) and json.Number("1.0") hash alike. v is one of
// the types appendValue sends here.
func appendNumber(b []byte, v any) []byte {
	switch v := v.(type) {
	case float64:
		return appendFloat(b, v)
	case float32:
		return appendFloat(b, float64(v))
	case int:
		return appendInt(b, int64(v))
	case int8:
		return appendInt(b, int64(v))
	case int16:
		return appendInt(b, int64(v))
	case int32:
		return appendInt(b, int64(v))
	case int64:
		return appendInt(b, v)
	case uint:
		return appendUint(b, uint64(v))
	case uint8:
		return appendUint(b, uint64(v))
	case uint16:
		return appendUint(b, uint64(v))
	case uint32:
		return appendUint(b, uint64(v))
	case uint64:
		return appendUint(b, v)
	case json.Number:
		return appendStr(b, 'd', canonJSONNumber(v))
	}
	panic(fmt.Sprintf("spatial: appendNumber got %T, which appendValue does not send", v))
}

// appendValue appends v tagged by its kind (see PayloadHash).
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if v {
			return append(b, 't')
		}
		return append(b, 'f')
	case string:
		return appendStr(b, 's', v)
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return appendNumber(b, v)
	case map[string]any:
		// Inline, not in a function of its own: escape analysis takes b
		// to escape through mutually recursive calls.
		// The pairs, not the keys: no lookup of each key once sorted.
		var arr [32]property
		props := arr[:0]
		for k, x := range v {
			props = append(props, property{k, x})
		}
		sortProperties(props)
		b = append(b, '{')
		b = binary.AppendUvarint(b, uint64(len(props)))
		for _, p := range props {
			b = appendStr(b, 'k', p.name)
			b = appendValue(b, p.val)
		}
		return b
	case []any:
		b = append(b, '[')
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, x := range v {
			b = appendValue(b, x)
		}
		return b
	case []string:
		b = append(b, '[')
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, x := range v {
			b = appendStr(b, 's', x)
		}
		return b
	case []float64:
		b = append(b, '[')
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, x := range v {
			b = appendFloat(b, x)
		}
		return b
	case orb.Geometry:
		return appendGeometry(b, v)
	}
	return appendStr(b, 'x', fmt.Sprintf("%T:%v", v, v))
}

// property is one name and value of a map, as appendValue sorts them.
type property struct {
	name string
	val  any
}

// sortProperties sorts ps by name, the names being distinct (a map's keys): by
// insertion for as many as a feature usually has, which costs less than a general sort
// and its comparison function there.
func sortProperties(ps []property) {
	if len(ps) > 16 {
		slices.SortFunc(ps, func(a, b property) int { return strings.Compare(a.name, b.name) })
		return
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && nameLess(ps[j].name, ps[j-1].name); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// nameLess is a < b, deciding on the first bytes where they differ, as a property's
// names mostly do, without the runtime's string comparison.
func nameLess(a, b string) bool {
	if a != "" && b != "" && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}

// canonFloat writes integral values without exponent or fraction, so that
// they match the integer types' decimal form.
func canonFloat(f float64) string { return string(appendCanonFloat(nil, f)) }

func appendCanonFloat(b []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(b, '0') // also -0
	case math.IsNaN(f) || math.IsInf(f, 0):
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		// Every integer below 2^53 is a float64, so the shortest digits that
		// give f back are all of its digits: what AppendFloat writes, sooner.
		return strconv.AppendInt(b, int64(f), 10)
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
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
