package proj

import (
	"errors"
	"fmt"

	"github.com/paulmach/orb"
)

// projection maps longitude/latitude in degrees to x/y and back.
type projection interface {
	forward(lon, lat float64) (x, y float64)
	inverse(x, y float64) (lon, lat float64)
}

// ErrUnsupported is wrapped by Lookup's error for an EPSG code outside the supported set.
var ErrUnsupported = errors.New("proj: CRS not supported")

// Supported names the supported set, for messages and documentation.
const Supported = "EPSG:4326 (and the geographic 4258, 4269), EPSG:3857, WGS 84 / UTM (EPSG:32601-32660, 32701-32760), " +
	"ETRS89 / UTM (EPSG:25828-25838), NAD83 / UTM (EPSG:26901-26923), ETRS89-extended / LAEA Europe (EPSG:3035) " +
	"and RGF93 v1 / Lambert-93 (EPSG:2154)"

// CRS is one supported coordinate reference system. The zero CRS is not usable; get one
// from Lookup. A CRS is immutable and safe for concurrent use.
type CRS struct {
	// Code is its EPSG code.
	Code int
	p    projection
}

// Geographic tells whether c's x/y are longitude/latitude.
func (c CRS) Geographic() bool {
	_, ok := c.p.(lonLat)
	return ok
}

// Forward projects p, WGS 84 longitude/latitude in degrees, into c's x/y.
func (c CRS) Forward(p orb.Point) orb.Point {
	x, y := c.p.forward(p[0], p[1])
	return orb.Point{x, y}
}

// Inverse brings p, in c's x/y, to WGS 84 longitude/latitude in degrees.
func (c CRS) Inverse(p orb.Point) orb.Point {
	lon, lat := c.p.inverse(p[0], p[1])
	return orb.Point{lon, lat}
}

// Lookup returns the CRS of EPSG code, or an error wrapping ErrUnsupported that names the
// supported set.
func Lookup(code int) (CRS, error) {
	p := lookup(code)
	if p == nil {
		return CRS{}, fmt.Errorf("EPSG:%d: %w (supported: %s)", code, ErrUnsupported, Supported)
	}
	return CRS{Code: code, p: p}, nil
}

// lookup is the registry: the projection of each supported code, nil for others.
func lookup(code int) projection {
	switch {
	case code == 4326 || code == 4258 || code == 4269:
		return lonLat{}
	case code == 3857 || code == 900913:
		return webMercator{}
	case code == 3035:
		return newLaea(grs80, 10, 52, 4321000, 3210000)
	case code == 2154:
		return newLcc(grs80, 3, 46.5, 49, 44, 700000, 6600000)
	case 32601 <= code && code <= 32660:
		return utm(wgs84, code-32600, false)
	case 32701 <= code && code <= 32760:
		return utm(wgs84, code-32700, true)
	case 25828 <= code && code <= 25838:
		return utm(grs80, code-25800, false)
	case 26901 <= code && code <= 26923:
		return utm(grs80, code-26900, false)
	}
	return nil
}

// utm is UTM zone on el, in the southern hemisphere's false northing when south.
func utm(el ellipsoid, zone int, south bool) projection {
	fn := 0.0
	if south {
		fn = 10000000
	}
	return newTmerc(el, float64(6*zone-183), 0, 0.9996, 500000, fn)
}

// Codes lists every supported EPSG code, in ascending order (900913, the old alias of
// 3857, excepted).
func Codes() []int {
	codes := []int{2154, 3035, 3857, 4258, 4269, 4326}
	for c := 25828; c <= 25838; c++ {
		codes = append(codes, c)
	}
	for c := 26901; c <= 26923; c++ {
		codes = append(codes, c)
	}
	for c := 32601; c <= 32660; c++ {
		codes = append(codes, c)
	}
	for c := 32701; c <= 32760; c++ {
		codes = append(codes, c)
	}
	return codes
}

// AreaOfUse is the lon/lat box where code's CRS is meant to be used, as the EPSG registry
// bounds it (the UTM zones over their six degrees from the equator or 80°S to 84°N), and
// false for an unsupported code.
func AreaOfUse(code int) (orb.Bound, bool) {
	box := func(w, s, e, n float64) (orb.Bound, bool) {
		return orb.Bound{Min: orb.Point{w, s}, Max: orb.Point{e, n}}, true
	}
	zone := func(z int) (float64, float64) { return float64(6*z - 186), float64(6*z - 180) }
	switch {
	case code == 4326 || code == 4258 || code == 4269:
		return box(-180, -90, 180, 90)
	case code == 3857 || code == 900913:
		return box(-180, -85.06, 180, 85.06)
	case code == 3035:
		return box(-35.58, 24.6, 44.83, 84.73)
	case code == 2154:
		return box(-9.86, 41.15, 10.38, 51.56)
	case 32601 <= code && code <= 32660:
		w, e := zone(code - 32600)
		return box(w, 0, e, 84)
	case 32701 <= code && code <= 32760:
		w, e := zone(code - 32700)
		return box(w, -80, e, 0)
	case 25828 <= code && code <= 25838:
		w, e := zone(code - 25800)
		return box(w, 34.75, e, 84.73)
	case 26901 <= code && code <= 26923:
		w, e := zone(code - 26900)
		return box(w, 23.81, e, 84)
	}
	return orb.Bound{}, false
}
