package proj

import "math"

// ellipsoid is a reference ellipsoid: semi-major axis a in metres and flattening f.
type ellipsoid struct {
	a, f float64
}

// The two ellipsoids of the supported CRSs. They differ in the flattening only, by
// 0.1 mm in the semi-minor axis.
var (
	wgs84 = ellipsoid{a: 6378137, f: 1 / 298.257223563}
	grs80 = ellipsoid{a: 6378137, f: 1 / 298.257222101}
)

// es is the first eccentricity squared.
func (e ellipsoid) es() float64 { return e.f * (2 - e.f) }

// ecc is the first eccentricity.
func (e ellipsoid) ecc() float64 { return math.Sqrt(e.es()) }

const (
	deg = math.Pi / 180
	rad = 180 / math.Pi
)
