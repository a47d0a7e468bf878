package tiles

import (
	"math"

	"github.com/paulmach/orb"
)

// Web Mercator tile math, with the formulas of orb's maptile (Fraction, Tile.Bound) and
// the cover of tilecover.Bound. It is written out here because importing maptile pulls
// orb/geojson and with it a MongoDB BSON module into the build for two small formulas.

// tileFraction returns the fractional tile coordinates of a lon/lat point at level z,
// as maptile.Fraction does (latitudes beyond ±85.0511 snap to the edge rows).
func tileFraction(p orb.Point, z int) (fx, fy float64) {
	n := float64(uint64(1) << uint(z))
	fx = (p[0]/360 + 0.5) * n
	switch {
	case p[1] < -85.0511:
		fy = n - 1
	case p[1] > 85.0511:
		fy = 0
	default:
		siny := math.Sin(p[1] * math.Pi / 180)
		fy = (0.5 + 0.5*math.Log((1+siny)/(1-siny))/(-2*math.Pi)) * n
	}
	return fx, fy
}

// tileToLonLat returns the lon/lat of tile corner (x, y) at level z.
func tileToLonLat(x, y float64, z int) orb.Point {
	n := float64(uint64(1) << uint(z))
	lon := 360 * (x/n - 0.5)
	lat := 2*math.Atan(math.Exp(math.Pi-2*math.Pi*(y/n)))*(180/math.Pi) - 90
	return orb.Point{lon, lat}
}

// tileBound returns the lon/lat footprint of tile z/x/y.
func tileBound(z, x, y int) orb.Bound {
	nw := tileToLonLat(float64(x), float64(y), z)
	se := tileToLonLat(float64(x+1), float64(y+1), z)
	return orb.Bound{Min: orb.Point{nw[0], se[1]}, Max: orb.Point{se[0], nw[1]}}
}

// tileRange is the range of tiles of level z that cover a, as tilecover.Bound computes
// it (a box ending exactly on a tile edge takes the tile beyond it too), clamped to the
// level (a box reaching 180° or the poles).
func tileRange(a orb.Bound, z int) (x0, x1, y0, y1 int) {
	last := 1<<uint(z) - 1
	clamp := func(f float64) int { return max(0, min(int(f), last)) }
	loX, loY := tileFraction(a.Min, z) // south-west: largest y
	hiX, hiY := tileFraction(a.Max, z) // north-east: smallest y
	return clamp(loX), clamp(hiX), clamp(hiY), clamp(loY)
}
