package geojson

// refPayloadHash below is spatial.PayloadHash as it was before it stopped
// allocating: TestPayloadHashUnchanged checks that no hash changed.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial"
)

const refHashVersion = "geoflow-payload-v1\x00"

func refPayloadHash(f *spatial.Feature) [32]byte {
	h := sha256.New()
	h.Write([]byte(refHashVersion))
	e := refHashEncoder{h: h}
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

type refHashEncoder struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64 + 1]byte
}

func (e *refHashEncoder) tag(t byte) { e.h.Write([]byte{t}) }

func (e *refHashEncoder) uvarint(n uint64) {
	k := binary.PutUvarint(e.buf[:], n)
	e.h.Write(e.buf[:k])
}

func (e *refHashEncoder) str(t byte, s string) {
	e.tag(t)
	e.uvarint(uint64(len(s)))
	e.h.Write([]byte(s))
}

func (e *refHashEncoder) geometry(g orb.Geometry) {
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

func (e *refHashEncoder) object(m map[string]any) {
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

func (e *refHashEncoder) value(v any) {
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
		e.str('d', refCanonFloat(v))
	case float32:
		e.str('d', refCanonFloat(float64(v)))
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
		e.str('d', refCanonJSONNumber(v))
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
			e.str('d', refCanonFloat(x))
		}
	case orb.Geometry:
		e.geometry(v)
	default:
		e.str('x', fmt.Sprintf("%T:%v", v, v))
	}
}

// refCanonFloat writes integral values without exponent or fraction, so that
// they match the integer types' decimal form.
func refCanonFloat(f float64) string {
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

func refCanonJSONNumber(n json.Number) string {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return refCanonFloat(f)
	}
	return s
}

func TestPayloadHashUnchanged(t *testing.T) {
	var fs []*spatial.Feature
	for _, doc := range diffSeeds(t) {
		for _, swap := range []bool{false, true} {
			r := NewReader(bytes.NewReader(doc), Options{SwapXY: swap})
			for range 1000 {
				f, err := r.Next()
				if err == io.EOF || err != nil && f == nil && !isFeatureErr(err) {
					break
				}
				if f != nil {
					fs = append(fs, f)
				}
			}
		}
	}
	ring := orb.Ring{{1, 2}, {3, 4}, {5, 6}, {1, 2}}
	geoms := []orb.Geometry{
		nil, orb.Point{1, math.Copysign(0, -1)}, orb.MultiPoint(nil), orb.MultiPoint{}, orb.MultiPoint{{1, 2}, {3, 4}},
		orb.LineString(nil), orb.LineString{{1, 2}, {3, 4}}, orb.MultiLineString{nil, {{1, 2}}, {}},
		orb.MultiLineString(nil), ring, orb.Ring(nil), orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}},
		orb.Polygon(nil), orb.Polygon{}, orb.Polygon{nil, ring}, orb.MultiPolygon{nil, {ring}, {}},
		orb.MultiPolygon(nil), orb.Collection(nil), orb.Collection{},
		orb.Collection{nil, orb.Point{1, 2}, orb.LineString(nil), orb.Collection{orb.Polygon{ring}}},
	}
	big := make(orb.LineString, 1000)
	for i := range big {
		big[i] = orb.Point{float64(i), -float64(i) / 3}
	}
	geoms = append(geoms, big)
	props := []map[string]any{
		nil, {}, {"a": 1.0, "b": int64(1), "c": float32(1.5), "d": json.Number("12"), "e": json.Number("1.50"),
			"f": uint8(7), "g": int8(-7), "h": []string{"x"}, "i": []float64{0, math.Copysign(0, -1), 1e21, 1e-7, math.Inf(1), math.NaN()},
			"j": map[string]any{"z": nil, "y": []any{true, false, "s"}}, "k": orb.Point{1, 2}, "l": struct{ A int }{1},
			"m": int(-3), "n": int16(3), "o": int32(3), "p": uint(3), "q": uint16(3), "r": uint32(3), "s": uint64(3), "t": 123456789.125},
	}
	many := map[string]any{}
	for i := range 100 {
		many[strconv.Itoa(i)] = float64(i) * 1.5
	}
	props = append(props, many)
	for _, g := range geoms {
		for _, p := range props {
			fs = append(fs, &spatial.Feature{Geometry: g, Properties: p})
		}
	}
	fs = append(fs, nil)
	for i, f := range fs {
		if got, want := spatial.PayloadHash(f), refPayloadHash(f); got != want {
			t.Fatalf("feature %d %+v: hash %x, was %x", i, f, got, want)
		}
	}
}

func isFeatureErr(err error) bool {
	_, ok := err.(*spatial.FeatureError)
	return ok
}

func TestPayloadHashAllocs(t *testing.T) {
	doc, _ := wfsFixtureDoc(t, 10)
	f, err := NewReader(bytes.NewReader(doc), Options{}).Next()
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { spatial.PayloadHash(f) }); n != 0 {
		t.Errorf("PayloadHash of a fixture parcel: %v allocations, want 0", n)
	}
}

func BenchmarkPayloadHash(b *testing.B) {
	doc, _ := wfsFixtureDoc(b, 10)
	f, err := NewReader(bytes.NewReader(doc), Options{}).Next()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("now", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			spatial.PayloadHash(f)
		}
	})
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			refPayloadHash(f)
		}
	})
}
