package gpkg

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/encoding/wkt"
)

// describe prints g with the type of every part and NaN as NaN, so that two geometries
// compare equal when they print the same (orb.Equal has NaN != NaN, and %v drops the
// types of a collection's members).
func describe(g orb.Geometry) string {
	switch g := g.(type) {
	case nil:
		return "nil"
	case orb.Collection:
		parts := make([]string, len(g))
		for i, m := range g {
			parts[i] = describe(m)
		}
		return "Collection[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%T%v", g, g)
}

func sameGeometry(a, b orb.Geometry) bool { return describe(a) == describe(b) }

// parseWKT parses WKT with orb, which has no POINT EMPTY: that becomes orb.Point{NaN, NaN},
// as decodeGeometry returns it. orb v0.14 also refuses MULTIPOINT EMPTY.
func parseWKT(t *testing.T, s string) orb.Geometry {
	t.Helper()
	if s == "MULTIPOINT EMPTY" {
		return orb.MultiPoint{}
	}
	g, err := wkt.Unmarshal(strings.ReplaceAll(s, "POINT EMPTY", "POINT (NaN NaN)"))
	if err != nil {
		t.Fatalf("parsing WKT %q: %v", s, err)
	}
	return g
}

// gdalCase is one line of testdata/geom_gdal.txt.
type gdalCase struct {
	name  string
	srsID int32
	blob  []byte
	want  string // WKT, or "ERROR what"
	is2D  bool   // GDAL wrote XY only, so our encoding must equal its bytes
}

var zmName = regexp.MustCompile(`_(z|m|zm)(_|$)`)

func readGDALCases(t testing.TB) []gdalCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "geom_gdal.txt"))
	if err != nil {
		t.Fatalf("opening GDAL's blobs: %v", err)
	}
	defer f.Close()
	var cases []gdalCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Fatalf("geom_gdal.txt: %d fields in %q, want 4", len(fields), line)
		}
		srs, err := strconv.ParseInt(fields[1], 10, 32)
		if err != nil {
			t.Fatalf("geom_gdal.txt: srs_id of %s: %v", fields[0], err)
		}
		blob, err := hex.DecodeString(fields[2])
		if err != nil {
			t.Fatalf("geom_gdal.txt: blob of %s: %v", fields[0], err)
		}
		cases = append(cases, gdalCase{name: fields[0], srsID: int32(srs), blob: blob, want: fields[3], is2D: !zmName.MatchString(fields[0])})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading GDAL's blobs: %v", err)
	}
	return cases
}

// expectedEnvelope is orb's bound of g's coordinates without NaN, or empty when there are
// none.
func expectedEnvelope(g orb.Geometry) (orb.Bound, bool) {
	var pts []orb.Point
	var walk func(orb.Geometry)
	walk = func(g orb.Geometry) {
		switch g := g.(type) {
		case orb.Point:
			pts = append(pts, g)
		case orb.MultiPoint:
			pts = append(pts, g...)
		case orb.LineString:
			pts = append(pts, g...)
		case orb.Ring:
			pts = append(pts, g...)
		case orb.Polygon:
			for _, r := range g {
				pts = append(pts, r...)
			}
		case orb.MultiLineString:
			for _, ls := range g {
				pts = append(pts, ls...)
			}
		case orb.MultiPolygon:
			for _, p := range g {
				walk(p)
			}
		case orb.Bound:
			pts = append(pts, g.Min, g.Max)
		case orb.Collection:
			for _, m := range g {
				walk(m)
			}
		}
	}
	walk(g)
	var b orb.Bound
	n := 0
	for _, p := range pts {
		if math.IsNaN(p[0]) || math.IsNaN(p[1]) {
			continue
		}
		if n == 0 {
			b = orb.Bound{Min: p, Max: p}
		} else {
			b = b.Extend(p)
		}
		n++
	}
	return b, n == 0
}

// TestDecodeGeometryGDAL reads the blobs GDAL wrote (testdata/geom_gdal.txt, from
// testdata/geom_gdal.py generate): every type, empties, Z, M and ZM, curves.
func TestDecodeGeometryGDAL(t *testing.T) {
	for _, c := range readGDALCases(t) {
		t.Run(c.name, func(t *testing.T) {
			g, srs, err := decodeGeometry(c.blob)
			if what, ok := strings.CutPrefix(c.want, "ERROR "); ok {
				if err == nil || !strings.Contains(err.Error(), what) {
					t.Fatalf("decodeGeometry = %s, %v; want an error naming %s", describe(g), err, what)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeGeometry: %v", err)
			}
			if srs != c.srsID {
				t.Errorf("srs_id = %d, want %d", srs, c.srsID)
			}
			want := parseWKT(t, c.want)
			if !sameGeometry(g, want) {
				t.Errorf("decodeGeometry = %s\nwant             %s", describe(g), describe(want))
			}

			env, empty, err := blobEnvelope(c.blob)
			if err != nil {
				t.Fatalf("blobEnvelope: %v", err)
			}
			wantEnv, wantEmpty := expectedEnvelope(want)
			if empty != wantEmpty || env != wantEnv && !wantEmpty {
				t.Errorf("blobEnvelope = %v, empty %v; want %v, empty %v", env, empty, wantEnv, wantEmpty)
			}
		})
	}
}

// TestEncodeGeometryMatchesGDAL: for XY geometries our blob is GDAL's, byte for byte:
// same flags, same envelope choice (none for points and empties), same WKB.
func TestEncodeGeometryMatchesGDAL(t *testing.T) {
	for _, c := range readGDALCases(t) {
		if !c.is2D || strings.HasPrefix(c.want, "ERROR") {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			got, err := encodeGeometry(parseWKT(t, c.want), c.srsID)
			if err != nil {
				t.Fatalf("encodeGeometry: %v", err)
			}
			if !bytes.Equal(got, c.blob) {
				t.Errorf("encodeGeometry =\n%X\nGDAL wrote\n%X", got, c.blob)
			}
		})
	}
}

// roundTripCases are the geometries every encoder test goes through.
func roundTripCases() []struct {
	name string
	g    orb.Geometry
	want orb.Geometry // what decoding gives back, when not g
	gdal string       // the WKT GDAL reads, when it does not say what decoding gives
} {
	nan := math.NaN()
	square := orb.Ring{{0, 0}, {10, 0}, {10, 10}, {0, 10}, {0, 0}}
	hole := orb.Ring{{2, 2}, {2, 4}, {4, 4}, {4, 2}, {2, 2}}
	return []struct {
		name string
		g    orb.Geometry
		want orb.Geometry
		gdal string
	}{
		{name: "point", g: orb.Point{1.5, -2.25}},
		{name: "point at origin", g: orb.Point{0, 0}},
		{name: "point empty", g: orb.Point{nan, nan}},
		{name: "point with one NaN", g: orb.Point{nan, 3}},
		{name: "multipoint", g: orb.MultiPoint{{1, 2}, {3, 4}, {-5, 6}}},
		// GDAL reads the empty points (ST_IsEmpty agrees) but its WKT leaves them out.
		{name: "multipoint with an empty point", g: orb.MultiPoint{{nan, nan}, {3, 4}}, gdal: "MULTIPOINT ((3 4))"},
		{name: "multipoint of empty points", g: orb.MultiPoint{{nan, nan}}, gdal: "MULTIPOINT EMPTY"},
		{name: "linestring", g: orb.LineString{{0, 0}, {1, 1}, {2, 0.5}}},
		{name: "multilinestring", g: orb.MultiLineString{{{0, 0}, {1, 1}}, {{2, 2}, {3, 3}, {4, 2}}}},
		{name: "polygon", g: orb.Polygon{square}},
		{name: "polygon with hole", g: orb.Polygon{square, hole}},
		{name: "multipolygon", g: orb.MultiPolygon{{square, hole}, {{{20, 20}, {21, 20}, {21, 21}, {20, 20}}}}},
		{name: "collection", g: orb.Collection{orb.Point{1, 2}, orb.LineString{{0, 0}, {3, 3}}, orb.Polygon{square}}},
		{name: "nested collection", g: orb.Collection{orb.Collection{orb.Point{-1, -2}}, orb.MultiPoint{{7, 8}}, orb.MultiPolygon{{hole}}, orb.MultiLineString{{{9, 9}, {10, 11}}}}},
		{name: "collection of an empty point", g: orb.Collection{orb.Point{nan, nan}}},
		{name: "collection with an empty member", g: orb.Collection{orb.LineString{}, orb.Point{5, 6}}},
		{name: "ring", g: hole, want: orb.Polygon{hole}},
		{name: "bound", g: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}, want: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}.ToPolygon()},
		{name: "collection of ring and bound", g: orb.Collection{hole, orb.Bound{Max: orb.Point{1, 1}}}, want: orb.Collection{orb.Polygon{hole}, orb.Bound{Max: orb.Point{1, 1}}.ToPolygon()}},
		{name: "linestring empty", g: orb.LineString{}},
		{name: "linestring nil", g: orb.LineString(nil), want: orb.LineString{}},
		{name: "polygon empty", g: orb.Polygon{}},
		{name: "polygon of an empty ring", g: orb.Polygon{orb.Ring{}}, gdal: "POLYGON EMPTY"},
		{name: "multipoint empty", g: orb.MultiPoint{}},
		{name: "multilinestring empty", g: orb.MultiLineString{}},
		{name: "multipolygon empty", g: orb.MultiPolygon{}},
		{name: "collection empty", g: orb.Collection{}},
		{name: "linestring with a NaN", g: orb.LineString{{nan, 1}, {2, 3}, {4, nan}}},
		{name: "extreme coordinates", g: orb.LineString{{-1e300, 0.125}, {1e300, -7}}},
	}
}

func TestGeometryRoundTrip(t *testing.T) {
	for _, srs := range []int32{4326, 0, -1, 25832, math.MaxInt32, math.MinInt32} {
		for _, c := range roundTripCases() {
			t.Run(fmt.Sprintf("%s/srs %d", c.name, srs), func(t *testing.T) {
				want := c.want
				if want == nil {
					want = c.g
				}
				b, err := encodeGeometry(c.g, srs)
				if err != nil {
					t.Fatalf("encodeGeometry: %v", err)
				}
				g, gotSRS, err := decodeGeometry(b)
				if err != nil {
					t.Fatalf("decodeGeometry(%X): %v", b, err)
				}
				if gotSRS != srs {
					t.Errorf("srs_id = %d, want %d", gotSRS, srs)
				}
				if !sameGeometry(g, want) {
					t.Errorf("decodeGeometry(encodeGeometry(g)) = %s\nwant                              %s", describe(g), describe(want))
				}

				env, empty, err := blobEnvelope(b)
				if err != nil {
					t.Fatalf("blobEnvelope: %v", err)
				}
				wantEnv, wantEmpty := expectedEnvelope(want)
				if empty != wantEmpty || !wantEmpty && env != wantEnv {
					t.Errorf("blobEnvelope = %v, empty %v; want %v, empty %v", env, empty, wantEnv, wantEmpty)
				}
				if flagged := b[3]&flagEmpty != 0; flagged != wantEmpty {
					t.Errorf("empty flag %v, want %v", flagged, wantEmpty)
				}

				// appendGeometry writes the same bytes after whatever the buffer holds.
				prefix := []byte("row 1 blob")
				got, err := appendGeometry(append(make([]byte, 0, 4), prefix...), c.g, srs)
				if err != nil {
					t.Fatalf("appendGeometry: %v", err)
				}
				if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], b) {
					t.Errorf("appendGeometry = %X, want %X after the prefix", got, b)
				}
			})
		}
	}
}

// TestEncodeGeometryHeader checks the bytes against 12-128r18 clause 2.1.3.
func TestEncodeGeometryHeader(t *testing.T) {
	f64 := func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }
	tests := []struct {
		name      string
		g         orb.Geometry
		flags     byte
		envelope  []float64 // minx, maxx, miny, maxy
		wkbType   uint32
		wkbLength int
	}{
		{name: "polygon: little-endian, envelope 1", g: orb.Polygon{{{-1, 2}, {3, -4}, {5, 6}, {-1, 2}}}, flags: 0b0000_0011, envelope: []float64{-1, 5, -4, 6}, wkbType: 3, wkbLength: 9 + 4 + 4*16},
		{name: "linestring", g: orb.LineString{{1, 2}, {3, 4}}, flags: 0b0000_0011, envelope: []float64{1, 3, 2, 4}, wkbType: 2, wkbLength: 9 + 2*16},
		{name: "multipoint", g: orb.MultiPoint{{1, 2}}, flags: 0b0000_0011, envelope: []float64{1, 1, 2, 2}, wkbType: 4, wkbLength: 9 + 21},
		{name: "point: no envelope", g: orb.Point{1, 2}, flags: 0b0000_0001, wkbType: 1, wkbLength: 21},
		{name: "empty point: empty flag, no envelope", g: orb.Point{math.NaN(), math.NaN()}, flags: 0b0001_0001, wkbType: 1, wkbLength: 21},
		{name: "empty linestring: empty flag, no envelope", g: orb.LineString{}, flags: 0b0001_0001, wkbType: 2, wkbLength: 9},
		{name: "empty collection", g: orb.Collection{}, flags: 0b0001_0001, wkbType: 7, wkbLength: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := encodeGeometry(tt.g, 25832)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:2]) != "GP" || b[2] != 0 {
				t.Errorf("magic and version % X, want 47 50 00", b[:3])
			}
			if b[3] != tt.flags {
				t.Errorf("flags %08b, want %08b", b[3], tt.flags)
			}
			if srs := int32(binary.LittleEndian.Uint32(b[4:])); srs != 25832 {
				t.Errorf("srs_id %d, want 25832", srs)
			}
			at := 8 + 8*len(tt.envelope)
			for i, want := range tt.envelope {
				if got := f64(b[8+8*i:]); got != want {
					t.Errorf("envelope[%d] = %v, want %v", i, got, want)
				}
			}
			if len(b) != at+tt.wkbLength {
				t.Fatalf("blob of %d bytes, want %d header and envelope + %d WKB", len(b), at, tt.wkbLength)
			}
			if b[at] != 1 || binary.LittleEndian.Uint32(b[at+1:]) != tt.wkbType {
				t.Errorf("WKB starts % X, want little-endian type %d", b[at:at+5], tt.wkbType)
			}
			// The WKB is what orb writes too: plain (ISO = OGC for XY) little-endian WKB.
			if _, isPoint := tt.g.(orb.Point); !isPoint {
				want, err := wkb.Marshal(tt.g, binary.LittleEndian)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b[at:], want) {
					t.Errorf("WKB % X\norb wrote % X", b[at:], want)
				}
			}
		})
	}

	t.Run("empty point is the spec's NaN", func(t *testing.T) {
		// A NaN with a payload and the sign bit still goes out as 0x7ff8000000000000.
		odd := math.Float64frombits(0xfff0000000000001)
		b, err := encodeGeometry(orb.Point{odd, math.NaN()}, 4326)
		if err != nil {
			t.Fatal(err)
		}
		want := []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}
		if !bytes.Equal(b[13:], want) {
			t.Errorf("coordinates % X, want % X", b[13:], want)
		}
	})

	t.Run("nil is a NULL geometry", func(t *testing.T) {
		b, err := encodeGeometry(nil, 4326)
		if b != nil || err != nil {
			t.Errorf("encodeGeometry(nil) = %X, %v; want nil, nil", b, err)
		}
		dst := []byte("keep")
		b, err = appendGeometry(dst, nil, 4326)
		if string(b) != "keep" || err != nil {
			t.Errorf("appendGeometry(dst, nil) = %q, %v; want dst, nil", b, err)
		}
	})
}

func TestAppendGeometryAllocations(t *testing.T) {
	var g orb.Geometry = benchPolygon()
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = appendGeometry(buf[:0], g, 4326)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("appendGeometry into a buffer with room allocates %v times per call, want 0", allocs)
	}
}

func TestEncodeGeometryErrors(t *testing.T) {
	deep := orb.Geometry(orb.Point{1, 2})
	for range maxDepth + 1 {
		deep = orb.Collection{deep}
	}
	deepest := orb.Geometry(orb.MultiPoint{{1, 2}})
	for range maxDepth - 1 {
		deepest = orb.Collection{deepest}
	}
	tests := []struct {
		name string
		g    orb.Geometry
		want string // "" for no error
	}{
		{name: "nil collection member", g: orb.Collection{orb.Point{1, 2}, nil}, want: "collection member 1 is nil"},
		{name: "nested too deep", g: deep, want: "nested deeper than 32"},
		{name: "nested as deep as the decoder reads", g: deepest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("x")
			b, err := appendGeometry(dst, tt.g, 4326)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("appendGeometry: %v", err)
				}
				if _, _, err := decodeGeometry(b[1:]); err != nil {
					t.Fatalf("decodeGeometry of what appendGeometry wrote: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("appendGeometry error %v, want one containing %q", err, tt.want)
			}
			if string(b) != "x" {
				t.Errorf("appendGeometry returned %q on error, want dst unchanged", b)
			}
		})
	}
}

// wkbWriter builds WKB by hand, in either byte order, for the inputs GDAL never writes.
type wkbWriter struct {
	order binary.AppendByteOrder
	b     []byte
}

func newWKB(big bool) *wkbWriter {
	if big {
		return &wkbWriter{order: binary.BigEndian}
	}
	return &wkbWriter{order: binary.LittleEndian}
}

func (w *wkbWriter) head(typ uint32) *wkbWriter {
	if w.order == binary.BigEndian {
		w.b = append(w.b, 0)
	} else {
		w.b = append(w.b, 1)
	}
	return w.u32(typ)
}

func (w *wkbWriter) u32(v uint32) *wkbWriter { w.b = w.order.AppendUint32(w.b, v); return w }

func (w *wkbWriter) f64(vs ...float64) *wkbWriter {
	for _, v := range vs {
		w.b = w.order.AppendUint64(w.b, math.Float64bits(v))
	}
	return w
}

func (w *wkbWriter) raw(b []byte) *wkbWriter { w.b = append(w.b, b...); return w }

// gpb builds a GeoPackage blob: header in the given byte order, flags as given (the
// byte-order bit is set from big), envelope doubles, then the WKB.
func gpb(big bool, flags byte, srs int32, env []float64, body []byte) []byte {
	w := newWKB(big)
	if !big {
		flags |= flagLittleEndian
	}
	w.b = append(w.b, 'G', 'P', 0, flags)
	w.u32(uint32(srs))
	w.f64(env...)
	return append(w.b, body...)
}

// TestDecodeGeometryEncodings covers the byte orders, envelopes and type codes GDAL does
// not write but other writers may.
func TestDecodeGeometryEncodings(t *testing.T) {
	const ewkbZ, ewkbM, ewkbSRID = 0x80000000, 0x40000000, 0x20000000
	tests := []struct {
		name string
		blob []byte
		want orb.Geometry
		srs  int32
	}{
		{
			name: "big-endian header and WKB",
			blob: gpb(true, envelopeXY<<1, 3857, []float64{1, 3, 2, 4}, newWKB(true).head(2).u32(2).f64(1, 2, 3, 4).b),
			want: orb.LineString{{1, 2}, {3, 4}}, srs: 3857,
		},
		{
			name: "little-endian header, big-endian WKB",
			blob: gpb(false, 0, 4326, nil, newWKB(true).head(1).f64(5, 6).b),
			want: orb.Point{5, 6}, srs: 4326,
		},
		{
			name: "members in the other byte order",
			blob: gpb(false, 0, 4326, nil, newWKB(false).head(4).u32(2).raw(newWKB(true).head(1).f64(1, 2).b).raw(newWKB(false).head(1).f64(3, 4).b).b),
			want: orb.MultiPoint{{1, 2}, {3, 4}}, srs: 4326,
		},
		{
			name: "envelope 2 (xyz)",
			blob: gpb(false, 2<<1, 4326, []float64{1, 1, 2, 2, 3, 3}, newWKB(false).head(1001).f64(1, 2, 3).b),
			want: orb.Point{1, 2}, srs: 4326,
		},
		{
			name: "envelope 3 (xym)",
			blob: gpb(false, 3<<1, 4326, []float64{1, 1, 2, 2, 4, 4}, newWKB(false).head(2001).f64(1, 2, 4).b),
			want: orb.Point{1, 2}, srs: 4326,
		},
		{
			name: "envelope 4 (xyzm), big-endian",
			blob: gpb(true, 4<<1, 4326, []float64{1, 1, 2, 2, 3, 3, 4, 4}, newWKB(true).head(3001).f64(1, 2, 3, 4).b),
			want: orb.Point{1, 2}, srs: 4326,
		},
		{
			name: "EWKB Z flag",
			blob: gpb(false, 0, 4326, nil, newWKB(false).head(2|ewkbZ).u32(2).f64(0, 0, 9, 1, 1, 9).b),
			want: orb.LineString{{0, 0}, {1, 1}}, srs: 4326,
		},
		{
			name: "EWKB ZM flags, big-endian polygon",
			blob: gpb(false, 0, 4326, nil, newWKB(true).head(3|ewkbZ|ewkbM).u32(1).u32(4).f64(0, 0, 1, 2, 1, 0, 1, 2, 1, 1, 1, 2, 0, 0, 1, 2).b),
			want: orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}, srs: 4326,
		},
		{
			name: "EWKB with an SRID",
			blob: gpb(false, 0, 4326, nil, newWKB(false).head(1|ewkbSRID).u32(4326).f64(7, 8).b),
			want: orb.Point{7, 8}, srs: 4326,
		},
		{
			name: "ISO M multilinestring",
			blob: gpb(false, 0, 4326, nil, newWKB(false).head(2005).u32(1).raw(newWKB(false).head(2002).u32(2).f64(0, 0, 5, 1, 1, 6).b).b),
			want: orb.MultiLineString{{{0, 0}, {1, 1}}}, srs: 4326,
		},
		{
			name: "empty flag over non-empty WKB: the WKB wins",
			blob: gpb(false, flagEmpty, 4326, nil, newWKB(false).head(1).f64(1, 2).b),
			want: orb.Point{1, 2}, srs: 4326,
		},
		{
			name: "negative srs_id",
			blob: gpb(true, 0, -1, nil, newWKB(true).head(7).u32(0).b),
			want: orb.Collection{}, srs: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, srs, err := decodeGeometry(tt.blob)
			if err != nil {
				t.Fatalf("decodeGeometry(%X): %v", tt.blob, err)
			}
			if !sameGeometry(g, tt.want) || srs != tt.srs {
				t.Errorf("decodeGeometry = %s, %d; want %s, %d", describe(g), srs, describe(tt.want), tt.srs)
			}
			if _, _, err := blobEnvelope(tt.blob); err != nil {
				t.Errorf("blobEnvelope: %v", err)
			}
		})
	}
}

func TestDecodeGeometryErrors(t *testing.T) {
	point := newWKB(false).head(1).f64(1, 2).b
	nested := newWKB(false)
	for range maxDepth + 1 {
		nested.head(7).u32(1)
	}
	nested.head(1).f64(1, 2)
	tests := []struct {
		name string
		blob []byte
		want string
	}{
		{name: "nil", blob: nil, want: "gpkg geometry: blob of 0 bytes is shorter than its 8-byte header"},
		{name: "short header", blob: []byte("GP\x00\x01\x00\x00\x00"), want: "gpkg geometry: blob of 7 bytes is shorter than its 8-byte header"},
		{name: "bad magic", blob: append([]byte("XP\x00\x01\x00\x00\x00\x00"), point...), want: `not the magic "GP"`},
		{name: "raw WKB", blob: append(append([]byte{}, point...), 0, 0), want: `not the magic "GP"`},
		{name: "version 1", blob: append([]byte("GP\x01\x01\x00\x00\x00\x00"), point...), want: "header version 1, want 0"},
		{name: "reserved bits", blob: gpb(false, 0x40, 0, nil, point), want: "reserved bits"},
		{name: "extended", blob: gpb(false, flagExtended, 0, nil, point), want: "ExtendedGeoPackageBinary"},
		{name: "envelope 5", blob: gpb(false, 5<<1, 0, make([]float64, 10), point), want: "envelope contents indicator 5 is invalid"},
		{name: "envelope cut short", blob: gpb(false, 1<<1, 0, []float64{1, 2, 3}, nil), want: "shorter than its 40-byte header with envelope 1"},
		{name: "no WKB", blob: gpb(false, 0, 0, nil, nil), want: "WKB at byte 8: 0 bytes left"},
		{name: "byte order 2", blob: gpb(false, 0, 0, nil, []byte{2, 1, 0, 0, 0}), want: "WKB at byte 8: byte order 2 is neither"},
		{name: "point cut short", blob: gpb(false, 0, 0, nil, point[:15]), want: "point needs 16 bytes, 10 left"},
		{name: "point z cut short", blob: gpb(false, 0, 0, nil, newWKB(false).head(1001).f64(1, 2).b), want: "point needs 24 bytes, 16 left"},
		{name: "huge point count", blob: gpb(false, 0, 0, nil, newWKB(false).head(2).u32(math.MaxUint32).f64(1, 2).b), want: "4294967295 points cannot fit in the 16 bytes left"},
		{name: "huge ring count", blob: gpb(false, 0, 0, nil, newWKB(false).head(3).u32(1<<30).b), want: "1073741824 rings cannot fit"},
		{name: "huge member count", blob: gpb(false, 0, 0, nil, newWKB(false).head(7).u32(1<<31).b), want: "2147483648 geometries cannot fit"},
		{name: "missing count", blob: gpb(false, 0, 0, nil, newWKB(false).head(2).b), want: "blob ends before the number of points"},
		{name: "trailing bytes", blob: gpb(false, 0, 0, nil, append(append([]byte{}, point...), 0xde, 0xad)), want: "2 bytes follow the WKB geometry that ends at byte 29"},
		{name: "geometry type 0", blob: gpb(false, 0, 0, nil, newWKB(false).head(0).b), want: "geometry type 0 (Geometry) is not supported"},
		{name: "circularstring", blob: gpb(false, 0, 0, nil, newWKB(false).head(8).u32(0).b), want: "geometry type 8 (CircularString) is not supported"},
		{name: "triangle z", blob: gpb(false, 0, 0, nil, newWKB(false).head(1017).u32(0).b), want: "geometry type 17 (Triangle) is not supported"},
		{name: "unknown type", blob: gpb(false, 0, 0, nil, newWKB(false).head(99).b), want: "unknown geometry type 99"},
		{name: "unknown dimension", blob: gpb(false, 0, 0, nil, newWKB(false).head(4001).b), want: "unknown geometry type 4001"},
		{name: "EWKB flag with ISO type", blob: gpb(false, 0, 0, nil, newWKB(false).head(0x80000000|1001).b), want: "base type 1001 is not one of 1-7"},
		{name: "EWKB SRID cut short", blob: gpb(false, 0, 0, nil, newWKB(false).head(0x20000001).b[:7]), want: "announces an SRID but the blob ends"},
		{name: "multipoint holding a linestring", blob: gpb(false, 0, 0, nil, newWKB(false).head(4).u32(1).head(2).u32(0).f64(0, 0, 0).b), want: "a MultiPoint member is a LineString"},
		{name: "multipolygon holding a point", blob: gpb(false, 0, 0, nil, newWKB(false).head(6).u32(1).raw(point).b), want: "a MultiPolygon member is a Point"},
		{name: "collections nested too deep", blob: gpb(false, 0, 0, nil, nested.b), want: "collections nested deeper than 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _, err := decodeGeometry(tt.blob)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decodeGeometry = %s, %v; want an error containing %q", describe(g), err, tt.want)
			}
		})
	}
}

func TestBlobEnvelope(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		blob  []byte
		want  orb.Bound
		empty bool
		err   string
	}{
		{
			name: "from the header, not the WKB",
			blob: gpb(false, envelopeXY<<1, 4326, []float64{-10, 10, -20, 20}, newWKB(false).head(1).f64(1, 2).b),
			want: orb.Bound{Min: orb.Point{-10, -20}, Max: orb.Point{10, 20}},
		},
		{
			name: "from a big-endian xyzm header",
			blob: gpb(true, 4<<1, 4326, []float64{1, 2, 3, 4, 5, 6, 7, 8}, newWKB(true).head(3001).f64(1, 3, 5, 7).b),
			want: orb.Bound{Min: orb.Point{1, 3}, Max: orb.Point{2, 4}},
		},
		{
			name: "computed from the WKB",
			blob: gpb(false, 0, 4326, nil, newWKB(true).head(2).u32(3).f64(5, -1, -3, 8, 0, 0).b),
			want: orb.Bound{Min: orb.Point{-3, -1}, Max: orb.Point{5, 8}},
		},
		{
			name: "computed from ZM WKB in a collection",
			blob: gpb(false, 0, 4326, nil, newWKB(false).head(7).u32(2).head(3001).f64(1, 2, 100, 100).head(3).u32(1).u32(0).b),
			want: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{1, 2}},
		},
		{
			name:  "empty flag",
			blob:  gpb(false, flagEmpty, 4326, nil, newWKB(false).head(2).u32(0).b),
			empty: true,
		},
		{
			name:  "NaN envelope",
			blob:  gpb(false, envelopeXY<<1, 4326, []float64{nan, nan, nan, nan}, newWKB(false).head(1).f64(nan, nan).b),
			empty: true,
		},
		{
			name: "partly NaN envelope: from the WKB",
			blob: gpb(false, envelopeXY<<1, 4326, []float64{0, nan, 0, 1}, newWKB(false).head(1).f64(7, 8).b),
			want: orb.Bound{Min: orb.Point{7, 8}, Max: orb.Point{7, 8}},
		},
		{
			name:  "WKB without coordinates, no flag",
			blob:  gpb(false, 0, 4326, nil, newWKB(false).head(6).u32(0).b),
			empty: true,
		},
		{
			name:  "empty point without the flag",
			blob:  gpb(false, 0, 4326, nil, newWKB(false).head(1).f64(nan, nan).b),
			empty: true,
		},
		{name: "garbage", blob: []byte("not a geometry at all"), err: `not the magic "GP"`},
		{name: "truncated WKB", blob: gpb(false, 0, 4326, nil, newWKB(false).head(2).u32(3).f64(1).b), err: "3 points cannot fit"},
		{name: "curve", blob: gpb(false, 0, 4326, nil, newWKB(false).head(9).u32(0).b), err: "CompoundCurve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, empty, err := blobEnvelope(tt.blob)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("blobEnvelope error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("blobEnvelope: %v", err)
			}
			if env != tt.want || empty != tt.empty {
				t.Errorf("blobEnvelope = %v, empty %v; want %v, empty %v", env, empty, tt.want, tt.empty)
			}
		})
	}
}

// gdalPython finds a Python with GDAL's bindings: $GEOFLOW_GDAL_PYTHON, python3, or
// Debian's /usr/bin/python3 (python3-gdal) when another python3 comes first on PATH.
func gdalPython(t *testing.T) string {
	t.Helper()
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("GEOFLOW_GDAL_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "from osgeo import ogr").Run() == nil {
			return p
		}
	}
	// GDAL is this test's oracle; make test installs it (gdal-bin brings python3-gdal).
	// Without it the test fails rather than skips: a skipped oracle proves nothing.
	t.Fatal("no python3 with GDAL's bindings (apt-get install python3-gdal; or set GEOFLOW_GDAL_PYTHON)")
	return ""
}

// TestGDALReadsOurBlobs has GDAL insert our blobs into a GeoPackage (so that its R-tree
// triggers run GDAL's ST_MinX... on them) and read them back.
func TestGDALReadsOurBlobs(t *testing.T) {
	python := gdalPython(t)
	var in strings.Builder
	type expectation struct {
		g     orb.Geometry
		gdal  string
		srs   int32
		env   orb.Bound
		empty bool
	}
	want := map[string]expectation{}
	for i, c := range roundTripCases() {
		srs := []int32{4326, 25832, 0, -1}[i%4]
		b, err := encodeGeometry(c.g, srs)
		if err != nil {
			t.Fatalf("%s: encodeGeometry: %v", c.name, err)
		}
		name := strings.ReplaceAll(c.name, " ", "_")
		fmt.Fprintf(&in, "%s\t%d\t%X\n", name, srs, b)
		g := c.want
		if g == nil {
			g = c.g
		}
		env, empty := expectedEnvelope(g)
		want[name] = expectation{g: g, gdal: c.gdal, srs: srs, env: env, empty: empty}
	}
	cmd := exec.Command(python, filepath.Join("testdata", "geom_gdal.py"), "check")
	cmd.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("geom_gdal.py check: %v\n%s", err, stderr.String())
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		var got struct {
			Name                   string
			WKT                    *string
			MinX, MaxX, MinY, MaxY *float64
			Empty, SRID, RTree     int
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("geom_gdal.py check printed %q: %v", line, err)
		}
		seen++
		w := want[got.Name]
		t.Run(got.Name, func(t *testing.T) {
			if got.WKT == nil {
				t.Fatal("GDAL read no geometry")
			}
			if w.gdal != "" {
				if *got.WKT != w.gdal {
					t.Errorf("GDAL read %s, want %s", *got.WKT, w.gdal)
				}
			} else if g := parseWKT(t, *got.WKT); !sameGeometry(g, w.g) {
				t.Errorf("GDAL read %s\nwant     %s", *got.WKT, describe(w.g))
			}
			if got.SRID != int(w.srs) {
				t.Errorf("GDAL's ST_SRID = %d, want %d", got.SRID, w.srs)
			}
			if (got.Empty == 1) != w.empty {
				t.Errorf("GDAL's ST_IsEmpty = %d, want empty %v", got.Empty, w.empty)
			}
			if w.empty {
				if got.RTree != 0 {
					t.Errorf("empty geometry has %d R-tree rows, want 0", got.RTree)
				}
				return
			}
			if got.RTree != 1 {
				t.Errorf("%d R-tree rows, want 1", got.RTree)
			}
			if got.MinX == nil || got.MaxX == nil || got.MinY == nil || got.MaxY == nil {
				t.Fatalf("GDAL's ST_MinX... gave NULL for a non-empty geometry")
			}
			gdalEnv := orb.Bound{Min: orb.Point{*got.MinX, *got.MinY}, Max: orb.Point{*got.MaxX, *got.MaxY}}
			if gdalEnv != w.env {
				t.Errorf("GDAL's envelope %v, want %v", gdalEnv, w.env)
			}
		})
	}
	if seen != len(want) {
		t.Errorf("GDAL reported %d geometries, want %d", seen, len(want))
	}
}

// FuzzDecodeGeometry: decodeGeometry never panics; what it accepts encodes again and
// decodes to the same geometry, and blobEnvelope accepts it too.
func FuzzDecodeGeometry(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		g, srs, err := decodeGeometry(b)
		if err != nil {
			return
		}
		if _, _, err := blobEnvelope(b); err != nil {
			t.Fatalf("decodeGeometry accepts %X, blobEnvelope refuses it: %v", b, err)
		}
		enc, err := encodeGeometry(g, srs)
		if err != nil {
			t.Fatalf("decodeGeometry(%X) = %s, which encodeGeometry refuses: %v", b, describe(g), err)
		}
		g2, srs2, err := decodeGeometry(enc)
		if err != nil {
			t.Fatalf("decodeGeometry(encodeGeometry(%s)) = %v", describe(g), err)
		}
		if srs2 != srs || !sameGeometry(g, g2) {
			t.Fatalf("round trip of %X: %s (srs %d), then %s (srs %d)", b, describe(g), srs, describe(g2), srs2)
		}
		env, empty, err := blobEnvelope(enc)
		if err != nil {
			t.Fatalf("blobEnvelope of our own blob %X: %v", enc, err)
		}
		if b[3]&flagEnvelopeMask == 0 && b[3]&flagEmpty == 0 {
			// Both envelopes come from the same coordinates.
			env0, empty0, _ := blobEnvelope(b)
			if empty0 != empty || env0 != env {
				t.Fatalf("blobEnvelope(%X) = %v %v, of its re-encoding %v %v", b, env0, empty0, env, empty)
			}
		}
	})
}

// FuzzBlobEnvelope: blobEnvelope never panics, and says empty with a zero envelope.
func FuzzBlobEnvelope(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		env, empty, err := blobEnvelope(b)
		if err != nil {
			if env != (orb.Bound{}) || empty {
				t.Fatalf("blobEnvelope(%X) = %v, %v with error %v", b, env, empty, err)
			}
			return
		}
		if empty && env != (orb.Bound{}) {
			t.Fatalf("blobEnvelope(%X) = %v for an empty geometry", b, env)
		}
		if math.IsNaN(env.Min[0] + env.Min[1] + env.Max[0] + env.Max[1]) {
			t.Fatalf("blobEnvelope(%X) = %v, with NaN", b, env)
		}
	})
}

// addSeeds seeds a fuzz target with GDAL's blobs, our own, and a few made by hand.
func addSeeds(f *testing.F) {
	for _, c := range readGDALCases(f) {
		f.Add(c.blob)
	}
	for _, c := range roundTripCases() {
		b, err := encodeGeometry(c.g, 4326)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(gpb(true, 4<<1, 4326, []float64{1, 2, 3, 4, 5, 6, 7, 8}, newWKB(true).head(3001).f64(1, 3, 5, 7).b))
	f.Add(gpb(false, 0, 4326, nil, newWKB(false).head(0xe0000002).u32(4326).u32(1).f64(1, 2, 3, 4).b))
	f.Add(gpb(false, 0, 4326, nil, newWKB(false).head(7).u32(1).head(7).u32(1).head(6).u32(1).head(3).u32(1).u32(0).b))
	f.Add([]byte("GP\x00\x01"))
}

// benchPolygon is a 20-vertex ring, the size of a typical building footprint.
func benchPolygon() orb.Polygon {
	r := make(orb.Ring, 0, 20)
	for i := range 19 {
		a := 2 * math.Pi * float64(i) / 19
		r = append(r, orb.Point{600000 + 10*math.Cos(a), 5800000 + 10*math.Sin(a)})
	}
	return orb.Polygon{append(r, r[0])}
}

func BenchmarkAppendGeometry(b *testing.B) {
	var g orb.Geometry = benchPolygon() // as a feature carries it
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendGeometry(buf[:0], g, 25832); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// appendGeometryOrbWKB is the alternative appendGeometry measured against: the header
// and envelope by hand, the WKB from orb/encoding/wkb.
func appendGeometryOrbWKB(dst []byte, g orb.Geometry, srsID int32) ([]byte, error) {
	w, err := wkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		return dst, err
	}
	bound := g.Bound()
	dst = append(dst, 'G', 'P', 0, flagLittleEndian|envelopeXY<<1)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
	for _, v := range []float64{bound.Min[0], bound.Max[0], bound.Min[1], bound.Max[1]} {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return append(dst, w...), nil
}

func BenchmarkAppendGeometryOrbWKB(b *testing.B) {
	var g orb.Geometry = benchPolygon()
	buf := make([]byte, 0, 1024)
	want, _ := appendGeometry(nil, g, 25832)
	if got, _ := appendGeometryOrbWKB(nil, g, 25832); !bytes.Equal(got, want) {
		b.Fatalf("orb's WKB gives\n%X\nappendGeometry\n%X", got, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendGeometryOrbWKB(buf[:0], g, 25832); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeGeometry(b *testing.B) {
	blob, _ := encodeGeometry(benchPolygon(), 25832)
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		if _, _, err := decodeGeometry(blob); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBlobEnvelope(b *testing.B) {
	polygon, _ := encodeGeometry(benchPolygon(), 25832)
	point, _ := encodeGeometry(orb.Point{600000, 5800000}, 25832)
	for _, bb := range []struct {
		name string
		blob []byte
	}{{"polygon, from the header", polygon}, {"point, from the WKB", point}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := blobEnvelope(bb.blob); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
