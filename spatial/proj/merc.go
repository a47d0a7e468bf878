package proj

import "math"

// webMercator is EPSG:3857, Popular Visualisation Pseudo-Mercator: the spherical
// Mercator formulas applied to WGS 84 longitude and latitude, on a sphere of WGS 84's
// semi-major axis.
type webMercator struct{}

const mercatorRadius = 6378137

// forward implements projection.
func (webMercator) forward(lon, lat float64) (x, y float64) {
	if math.Abs(lat) >= 90 {
		return math.NaN(), math.NaN() // the poles lie at infinity
	}
	return mercatorRadius * lon * deg, mercatorRadius * math.Log(math.Tan(math.Pi/4+lat*deg/2))
}

// inverse implements projection.
func (webMercator) inverse(x, y float64) (lon, lat float64) {
	return x / mercatorRadius * rad, (math.Pi/2 - 2*math.Atan(math.Exp(-y/mercatorRadius))) * rad
}

// lonLat is a geographic CRS: x/y are longitude/latitude in degrees, as they are.
type lonLat struct{}

// forward implements projection.
func (lonLat) forward(lon, lat float64) (x, y float64) { return lon, lat }

// inverse implements projection.
func (lonLat) inverse(x, y float64) (lon, lat float64) { return x, y }
