package proj

import "math"

// lcc is the Lambert conformal conic with two standard parallels (EPSG method 9802),
// as EPSG:2154 (Lambert-93) uses it. The inverse finds the latitude by fixed-point
// iteration on t (EPSG Guidance Note 7-2), exact to the last bit.
type lcc struct {
	e           float64
	lon0        float64 // radians
	n, af, rho0 float64 // cone constant, a·F, radius at the latitude of origin
	x0, y0      float64
}

func newLcc(el ellipsoid, lon0, lat0, lat1, lat2, fe, fn float64) *lcc {
	p := &lcc{e: el.ecc(), lon0: lon0 * deg, x0: fe, y0: fn}
	m := func(phi float64) float64 { s := math.Sin(phi); return math.Cos(phi) / math.Sqrt(1-el.es()*s*s) }
	p1, p2 := lat1*deg, lat2*deg
	m1, m2 := m(p1), m(p2)
	t1, t2 := p.t(p1), p.t(p2)
	p.n = (math.Log(m1) - math.Log(m2)) / (math.Log(t1) - math.Log(t2))
	p.af = el.a * m1 / (p.n * math.Pow(t1, p.n))
	p.rho0 = p.af * math.Pow(p.t(lat0*deg), p.n)
	return p
}

// t is the EPSG t of latitude phi (radians).
func (p *lcc) t(phi float64) float64 {
	s := math.Sin(phi)
	return math.Tan(math.Pi/4-phi/2) / math.Pow((1-p.e*s)/(1+p.e*s), p.e/2)
}

// forward implements projection.
func (p *lcc) forward(lon, lat float64) (x, y float64) {
	rho := p.af * math.Pow(p.t(lat*deg), p.n)
	theta := p.n * remainder(lon*deg-p.lon0)
	return p.x0 + rho*math.Sin(theta), p.y0 + p.rho0 - rho*math.Cos(theta)
}

// inverse implements projection.
func (p *lcc) inverse(x, y float64) (lon, lat float64) {
	dx, dy := x-p.x0, p.rho0-(y-p.y0)
	rho := math.Copysign(math.Hypot(dx, dy), p.n)
	theta := math.Atan2(math.Copysign(1, p.n)*dx, math.Copysign(1, p.n)*dy)
	t := math.Pow(rho/p.af, 1/p.n)
	phi := math.Pi/2 - 2*math.Atan(t)
	for range 15 {
		s := p.e * math.Sin(phi)
		next := math.Pi/2 - 2*math.Atan(t*math.Pow((1-s)/(1+s), p.e/2))
		d := next - phi
		phi = next
		if math.Abs(d) < 1e-15 {
			break
		}
	}
	return remainder(theta/p.n+p.lon0) * rad, phi * rad
}
