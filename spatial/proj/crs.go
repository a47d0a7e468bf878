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
