package geojson

import (
	"unsafe"

	"github.com/paulmach/orb"
)

// boxedString is *s as an interface value whose data is s itself, where any(*s) would
// allocate a copy of the string header: flush boxes a feature's string properties out
// of one []string, one allocation for all of them instead of one each. *s must never
// be written again, which a string's header in a slice flush made is not.
func boxedString(s *string) any {
	v := any("")
	(*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] = unsafe.Pointer(s)
	return v
}

// polygonBox is a polygon of one ring together with its slice of rings.
type polygonBox struct {
	p     orb.Polygon
	rings [1]orb.Ring
}

// onePolygon is orb.Polygon{ring} as an orb.Geometry in one allocation, where
// make(orb.Polygon, 1) and its conversion to the interface take one each: the value's
// data is the polygon's header in the same allocation as its ring, never written again.
func onePolygon(ring orb.Ring) orb.Geometry {
	b := &polygonBox{rings: [1]orb.Ring{ring}}
	b.p = b.rings[:]
	g := orb.Geometry(orb.Polygon(nil))
	(*[2]unsafe.Pointer)(unsafe.Pointer(&g))[1] = unsafe.Pointer(&b.p)
	return g
}
