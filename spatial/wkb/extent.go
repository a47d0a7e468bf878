package wkb

import (
	"math"

	"github.com/paulmach/orb"
)

// Extent accumulates [minx, maxx, miny, maxy] over coordinates, leaving out any with a
// NaN: (NaN, NaN) is an empty point, and half a coordinate has no place in a box (an
// R-tree refuses it). Infinities are kept. Its zero value is not ready: use NewExtent.
// It is not safe for concurrent use.
type Extent struct {
	MinX, MaxX, MinY, MaxY float64
	points                 int
}

// NewExtent returns an Extent of no coordinates.
func NewExtent() Extent {
	return Extent{MinX: math.Inf(1), MaxX: math.Inf(-1), MinY: math.Inf(1), MaxY: math.Inf(-1)}
}

// Add extends e by (x, y), unless either is NaN.
func (e *Extent) Add(x, y float64) {
	if x != x || y != y {
		return
	}
	e.points++
	if x < e.MinX {
		e.MinX = x
	}
	if x > e.MaxX {
		e.MaxX = x
	}
	if y < e.MinY {
		e.MinY = y
	}
	if y > e.MaxY {
		e.MaxY = y
	}
}

// Empty tells whether e has had no coordinate without a NaN.
func (e *Extent) Empty() bool { return e.points == 0 }

// Bound returns e as an orb.Bound; an empty e gives an inverted, infinite one.
func (e *Extent) Bound() orb.Bound {
	return orb.Bound{Min: orb.Point{e.MinX, e.MinY}, Max: orb.Point{e.MaxX, e.MaxY}}
}
