package flatgeobuf

import (
	"math"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/paulmach/orb"
)

// bbox is a bounding box as the packed R-tree holds it. The empty box, of a feature
// without coordinates, is +Inf..-Inf: it grows to any point and intersects nothing.
type bbox struct{ minX, minY, maxX, maxY float64 }

// emptyBox is the box of no coordinates.
var emptyBox = bbox{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}

// empty says whether b holds no coordinate.
func (b bbox) empty() bool { return b.minX > b.maxX }

// add grows b to hold p.
func (b *bbox) add(p orb.Point) {
	b.minX, b.maxX = min(b.minX, p[0]), max(b.maxX, p[0])
	b.minY, b.maxY = min(b.minY, p[1]), max(b.maxY, p[1])
}

// union grows b to hold o.
func (b *bbox) union(o bbox) {
	b.minX, b.minY = min(b.minX, o.minX), min(b.minY, o.minY)
	b.maxX, b.maxY = max(b.maxX, o.maxX), max(b.maxY, o.maxY)
}

// typeOf is the FlatGeobuf type g is written as: orb.Ring and orb.Bound as polygons;
// typeUnknown for a type orb may add.
func typeOf(g orb.Geometry) geometryType {
	switch g.(type) {
	case orb.Point:
		return typePoint
	case orb.LineString:
		return typeLineString
	case orb.Polygon, orb.Ring, orb.Bound:
		return typePolygon
	case orb.MultiPoint:
		return typeMultiPoint
	case orb.MultiLineString:
		return typeMultiLineString
	case orb.MultiPolygon:
		return typeMultiPolygon
	case orb.Collection:
		return typeGeometryCollection
	}
	return typeUnknown
}

// layerType is the geometry type of a layer whose geometries so far have type typ
// (seen false before the first) once it also holds g: the type they all share, else
// typeUnknown, which FlatGeobuf uses for a mix (a reader then reads each geometry's own
// type). A nil g changes nothing; an empty geometry has its type.
func layerType(typ geometryType, seen bool, g orb.Geometry) (geometryType, bool) {
	if g == nil {
		return typ, seen
	}
	t := typeOf(g)
	if seen && t != typ {
		return typeUnknown, true
	}
	return t, true
}

// geometryEncoder writes orb geometries as FlatGeobuf Geometry tables into a builder,
// and the box of their coordinates. Its slices are reused from one feature to the next.
type geometryEncoder struct {
	b     *flatbuffers.Builder
	box   bbox
	ends  []uint32
	parts [][]flatbuffers.UOffsetT // one slice per depth of collections
}

// encode writes g into e.b and returns its table, or 0 when g is nil, of an unknown
// type, or has no coordinates (FlatGeobuf has no empty geometries: such a feature has
// none). The type is written in every table, the top one included: the layer's type is
// known only once every feature is written, and a reader takes the header's type
// when it is not Unknown.
func (e *geometryEncoder) encode(g orb.Geometry) flatbuffers.UOffsetT {
	e.box = emptyBox
	if g == nil || typeOf(g) == typeUnknown || !hasCoordinates(g) {
		return 0
	}
	return e.geometry(g, 0)
}

// hasCoordinates says whether g has at least one point; a Point of NaN has none.
func hasCoordinates(g orb.Geometry) bool {
	switch g := g.(type) {
	case orb.Point:
		return !math.IsNaN(g[0]) && !math.IsNaN(g[1])
	case orb.Bound:
		return true
	case orb.LineString:
		return len(g) > 0
	case orb.Ring:
		return len(g) > 0
	case orb.MultiPoint:
		return len(g) > 0
	case orb.Polygon:
		return anyPoint(g)
	case orb.MultiLineString:
		return anyPoint(g)
	case orb.MultiPolygon:
		for _, p := range g {
			if anyPoint(p) {
				return true
			}
		}
	case orb.Collection:
		for _, p := range g {
			if p != nil && hasCoordinates(p) {
				return true
			}
		}
	}
	return false
}

// anyPoint says whether one of ls has a point. (Generic rather than through
// hasCoordinates, which would box every ring into an interface: an allocation each.)
func anyPoint[L ~[]orb.Point](ls []L) bool {
	for _, l := range ls {
		if len(l) > 0 {
			return true
		}
	}
	return false
}

// geometry writes g, which has coordinates, at depth nested collections, and returns
// its table.
func (e *geometryEncoder) geometry(g orb.Geometry, depth int) flatbuffers.UOffsetT {
	switch g := g.(type) {
	case orb.Point:
		e.b.StartVector(8, 2, 8)
		e.prependPoint(g)
		return e.table(typePoint, e.b.EndVector(2), 0, 0)
	case orb.LineString:
		return encodeLines(e, typeLineString, []orb.LineString{g})
	case orb.MultiPoint:
		return encodeLines(e, typeMultiPoint, []orb.MultiPoint{g})
	case orb.Ring:
		return encodeLines(e, typePolygon, []orb.Ring{g})
	case orb.Bound:
		return e.geometry(g.ToPolygon(), depth)
	case orb.Polygon:
		return encodeLines(e, typePolygon, g)
	case orb.MultiLineString:
		return encodeLines(e, typeMultiLineString, g)
	case orb.MultiPolygon:
		return e.multiPolygon(g, depth)
	case orb.Collection:
		return e.collection(g, depth)
	}
	return 0
}

// encodeLines writes a geometry of one or several runs of points (polygon rings, line
// strings): their points one after the other, and where each run ends when there is
// more than one.
func encodeLines[L ~[]orb.Point](e *geometryEncoder, t geometryType, ls []L) flatbuffers.UOffsetT {
	var ends flatbuffers.UOffsetT
	if len(ls) > 1 {
		e.ends = e.ends[:0]
		end := uint32(0)
		for _, l := range ls {
			end += uint32(len(l))
			e.ends = append(e.ends, end)
		}
		e.b.StartVector(4, len(e.ends), 4)
		for i := len(e.ends) - 1; i >= 0; i-- {
			e.b.PrependUint32(e.ends[i])
		}
		ends = e.b.EndVector(len(e.ends))
	}
	n := 0
	for _, l := range ls {
		n += len(l)
	}
	e.b.StartVector(8, 2*n, 8)
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		for j := len(l) - 1; j >= 0; j-- {
			e.prependPoint(l[j])
		}
	}
	return e.table(t, e.b.EndVector(2*n), ends, 0)
}

// prependPoint prepends p's coordinates, x first once read, and adds p to the box. It
// is called inside a vector (StartVector) that made room for every coordinate, so they
// are placed without Prepend's check for room and alignment per number, a third of
// the time of encoding a polygon.
func (e *geometryEncoder) prependPoint(p orb.Point) {
	e.b.PlaceFloat64(p[1])
	e.b.PlaceFloat64(p[0])
	e.box.add(p)
}

// collection writes a geometry collection, made of its members. Parts without coordinates (nil, empty) are left out: a reader
// of FlatGeobuf has no use for them.
func (e *geometryEncoder) collection(gs orb.Collection, depth int) flatbuffers.UOffsetT {
	if len(e.parts) <= depth {
		e.parts = append(e.parts, nil)
	}
	offs := e.parts[depth][:0]
	for _, g := range gs {
		if g == nil || typeOf(g) == typeUnknown || !hasCoordinates(g) {
			continue
		}
		offs = append(offs, e.geometry(g, depth+1))
	}
	e.parts[depth] = offs // kept for the next feature
	return e.partsTable(typeGeometryCollection, offs)
}

// multiPolygon writes a multipolygon as collection does a collection, without boxing each polygon
// in an interface.
func (e *geometryEncoder) multiPolygon(mp orb.MultiPolygon, depth int) flatbuffers.UOffsetT {
	if len(e.parts) <= depth {
		e.parts = append(e.parts, nil)
	}
	offs := e.parts[depth][:0]
	for _, p := range mp {
		if anyPoint(p) {
			offs = append(offs, encodeLines(e, typePolygon, p))
		}
	}
	e.parts[depth] = offs
	return e.partsTable(typeMultiPolygon, offs)
}

// partsTable writes a Geometry table of type t made of the parts offs.
func (e *geometryEncoder) partsTable(t geometryType, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	e.b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		e.b.PrependUOffsetT(offs[i])
	}
	return e.table(t, 0, 0, e.b.EndVector(len(offs)))
}

// table writes a Geometry table of type t with the vectors given (0 for none).
func (e *geometryEncoder) table(t geometryType, xy, ends, parts flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	e.b.StartObject(geometryFields)
	e.b.PrependUOffsetTSlot(geometryEnds, ends, 0)
	e.b.PrependUOffsetTSlot(geometryXY, xy, 0)
	e.b.PrependUOffsetTSlot(geometryParts, parts, 0)
	e.b.PrependUint8Slot(geometryTypeSlot, uint8(t), 0)
	return e.b.EndObject()
}
