package proj

import "math"

// laea is the ellipsoidal Lambert azimuthal equal-area projection, oblique aspect
// (EPSG method 9820; Snyder, "Map Projections: A Working Manual", pp. 187-188), as
// EPSG:3035 uses it. The inverse finds the latitude from the authalic one by Newton's
// method on q, exact where a truncated series is not.
type laea struct {
	e, es        float64
	lon0         float64 // radians
	a            float64
	qp           float64 // q at the pole
	rq           float64 // radius of the authalic sphere
	sinB1, cosB1 float64 // the origin's authalic latitude
	d            float64
	x0, y0       float64
}

func newLaea(el ellipsoid, lon0, lat0, fe, fn float64) *laea {
	p := &laea{e: el.ecc(), es: el.es(), lon0: lon0 * deg, a: el.a, x0: fe, y0: fn}
	p.qp = p.q(1)
	p.rq = p.a * math.Sqrt(p.qp/2)
	sin0 := math.Sin(lat0 * deg)
	b1 := math.Asin(p.q(sin0) / p.qp)
	p.sinB1, p.cosB1 = math.Sincos(b1)
	p.d = p.a * math.Cos(lat0*deg) / math.Sqrt(1-p.es*sin0*sin0) / (p.rq * p.cosB1)
	return p
}

// q is Snyder's q (equation 3-12) of the latitude whose sine is s.
func (p *laea) q(s float64) float64 {
	es := p.e * s
	return (1 - p.es) * (s/(1-es*es) - math.Log((1-es)/(1+es))/(2*p.e))
}

// forward implements projection.
func (p *laea) forward(lon, lat float64) (x, y float64) {
	lam := remainder(lon*deg - p.lon0)
	sinB := p.q(math.Sin(lat*deg)) / p.qp
	cosB := math.Sqrt(math.Max(0, 1-sinB*sinB))
	sinL, cosL := math.Sincos(lam)
	b := p.rq * math.Sqrt(2/(1+p.sinB1*sinB+p.cosB1*cosB*cosL))
	return p.x0 + b*p.d*cosB*sinL, p.y0 + b/p.d*(p.cosB1*sinB-p.sinB1*cosB*cosL)
}

// inverse implements projection.
func (p *laea) inverse(x, y float64) (lon, lat float64) {
	xx, yy := (x-p.x0)/p.d, (y-p.y0)*p.d
	rho := math.Hypot(xx, yy)
	if rho == 0 {
		return p.lon0 * rad, math.Asin(p.sinB1*p.qp) * rad // the origin
	}
	ce := 2 * math.Asin(math.Min(1, rho/(2*p.rq)))
	sinC, cosC := math.Sincos(ce)
	sinB := cosC*p.sinB1 + yy*sinC*p.cosB1/rho
	lam := math.Atan2(xx*sinC, rho*p.cosB1*cosC-yy*p.sinB1*sinC)
	return remainder(p.lon0+lam) * rad, p.latitude(sinB*p.qp) * rad
}

// latitude finds the latitude (radians) whose q is q, by Newton's method (Snyder
// equation 3-16), starting from the authalic latitude.
func (p *laea) latitude(q float64) float64 {
	phi := math.Asin(math.Max(-1, math.Min(1, q/2)))
	for range 12 {
		s, c := math.Sincos(phi)
		w := 1 - p.es*s*s
		d := w * w / (2 * c) * (q/(1-p.es) - s/w + math.Log((1-p.e*s)/(1+p.e*s))/(2*p.e))
		if math.IsNaN(d) || math.IsInf(d, 0) {
			break
		}
		phi += d
		if math.Abs(d) < 1e-15 {
			break
		}
	}
	return phi
}
