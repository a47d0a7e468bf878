package gpkg

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial/wkb"
)

// encodeGeometry returns g as a GeoPackage geometry blob for srs srsID: magic "GP",
// version 0, flags with the little-endian bit set, the int32 srs_id, an envelope, then
// little-endian ISO WKB. nil g returns nil, nil (a NULL geometry); a typed nil slice
// (orb.LineString(nil)) is an empty geometry of its type.
//
// The envelope is [minx, maxx, miny, maxy] (indicator 1) for every non-empty geometry
// except a Point, which gets none (indicator 0), as GDAL writes them: a point's envelope
// is the point itself, readers get it from the 16 bytes of WKB as fast as from the
// header, and storing it would more than double a point row (29 bytes against 61).
// An empty geometry, one without a coordinate whose x and y are both numbers, has the
// empty flag set and no envelope. An empty point is orb.Point{NaN, NaN}, written with
// the quiet NaN the GeoPackage requires; orb has no other way to say it.
//
// orb.Ring and orb.Bound are written as Polygons. Coordinates are written as given, not
// refused: a coordinate with a NaN is left out of the envelope (the R-tree would refuse
// it), infinities are kept.
func encodeGeometry(g orb.Geometry, srsID int32) ([]byte, error) {
	if g == nil {
		return nil, nil
	}
	return appendGeometry(nil, g, srsID)
}

// appendGeometry is encodeGeometry appending to dst, so that a writer can reuse one
// buffer for every row: it allocates only when dst lacks the capacity. nil g appends
// nothing and returns dst (the caller writes NULL). On error dst is returned unchanged.
func appendGeometry(dst []byte, g orb.Geometry, srsID int32) ([]byte, error) {
	if g == nil {
		return dst, nil
	}
	switch v := g.(type) {
	case orb.Ring:
		g = orb.Polygon{v}
	case orb.Bound:
		g = v.ToPolygon()
	}
	n, err := wkbSize(g, 0)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	if p, ok := g.(orb.Point); ok {
		flags := byte(flagLittleEndian)
		if math.IsNaN(p[0]) || math.IsNaN(p[1]) {
			flags |= flagEmpty // as wkb.Extent.Add decides
		}
		dst = grow(dst, headerLen+n)
		dst = append(dst, 'G', 'P', 0, flags)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
		return appendWKB(dst, start, p, nil)
	}

	dst = grow(dst, headerLen+32+n)
	dst = append(dst, 'G', 'P', 0, flagLittleEndian|envelopeXY<<1)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
	envAt := len(dst)
	dst = dst[:envAt+32]
	e := wkb.NewExtent()
	dst, err = appendWKB(dst, start, g, &e)
	if err != nil {
		return dst, err
	}
	if e.Empty() {
		// Rare: move the WKB over the envelope slot rather than walk the geometry twice.
		dst[start+3] = flagLittleEndian | flagEmpty
		copy(dst[envAt:], dst[envAt+32:])
		return dst[:len(dst)-32], nil
	}
	binary.LittleEndian.PutUint64(dst[envAt:], math.Float64bits(e.MinX))
	binary.LittleEndian.PutUint64(dst[envAt+8:], math.Float64bits(e.MaxX))
	binary.LittleEndian.PutUint64(dst[envAt+16:], math.Float64bits(e.MinY))
	binary.LittleEndian.PutUint64(dst[envAt+24:], math.Float64bits(e.MaxY))
	return dst, nil
}

// appendWKB appends g's WKB as a GeoPackage wants it (wkb.Options NilAsEmpty and
// QuietNaN), extending e when not nil, to a blob begun at dst[start]. g has passed
// wkbSize, so the error is not expected; dst[:start] comes back with it.
func appendWKB(dst []byte, start int, g orb.Geometry, e *wkb.Extent) ([]byte, error) {
	dst, err := wkb.AppendExtent(dst, g, wkb.Options{NilAsEmpty: true, QuietNaN: true}, e)
	if err != nil {
		return dst[:start], fmt.Errorf("gpkg geometry: encoding: %w", err)
	}
	return dst, nil
}

// grow makes room for n more bytes in one allocation.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// wkbSize returns the length of g's WKB, and refuses what the WKB cannot say or the
// decoder would not read back: nil collection members, counts beyond uint32, nesting
// deeper than maxDepth.
func wkbSize(g orb.Geometry, depth int) (int, error) {
	switch g.(type) {
	case orb.MultiPoint, orb.MultiLineString, orb.MultiPolygon, orb.Collection:
		if depth >= maxDepth {
			return 0, fmt.Errorf("gpkg geometry: encoding: collections nested deeper than %d", maxDepth)
		}
	}
	switch g := g.(type) {
	case orb.Point:
		return 21, nil
	case orb.MultiPoint:
		if err := checkCount(len(g), "multipoint"); err != nil {
			return 0, err
		}
		return 9 + 21*len(g), nil
	case orb.LineString:
		if err := checkCount(len(g), "linestring"); err != nil {
			return 0, err
		}
		return 9 + 16*len(g), nil
	case orb.Ring:
		if err := checkCount(len(g), "ring"); err != nil {
			return 0, err
		}
		return 9 + 4 + 16*len(g), nil
	case orb.Polygon:
		return polygonSize(g)
	case orb.Bound:
		return 9 + 4 + 16*5, nil
	case orb.MultiLineString:
		if err := checkCount(len(g), "multilinestring"); err != nil {
			return 0, err
		}
		n := 9
		for _, ls := range g {
			if err := checkCount(len(ls), "linestring"); err != nil {
				return 0, err
			}
			n += 9 + 16*len(ls)
		}
		return n, nil
	case orb.MultiPolygon:
		if err := checkCount(len(g), "multipolygon"); err != nil {
			return 0, err
		}
		n := 9
		for _, p := range g {
			m, err := polygonSize(p)
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	case orb.Collection:
		if err := checkCount(len(g), "collection"); err != nil {
			return 0, err
		}
		n := 9
		for i, m := range g {
			if m == nil {
				return 0, fmt.Errorf("gpkg geometry: encoding: collection member %d is nil", i)
			}
			k, err := wkbSize(m, depth+1)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	return 0, fmt.Errorf("gpkg geometry: encoding: unsupported geometry type %T", g)
}

func polygonSize(p orb.Polygon) (int, error) {
	if err := checkCount(len(p), "polygon"); err != nil {
		return 0, err
	}
	n := 9
	for _, r := range p {
		if err := checkCount(len(r), "ring"); err != nil {
			return 0, err
		}
		n += 4 + 16*len(r)
	}
	return n, nil
}

func checkCount(n int, what string) error {
	if uint64(n) > math.MaxUint32 {
		return fmt.Errorf("gpkg geometry: encoding: %s of %d parts does not fit WKB's uint32 count", what, n)
	}
	return nil
}
