package proj

import "math"

// tmerc is a transverse Mercator projection by Krüger's series to the sixth order in
// the third flattening n (Karney 2011, equations 7, 9, 11 and 35-36).
type tmerc struct {
	e      float64    // eccentricity
	es     float64    // eccentricity squared
	lon0   float64    // central meridian, radians
	k0A    float64    // scale on the central meridian times the rectifying radius A
	x0, y0 float64    // false easting, and false northing less the origin's northing
	alpha  [6]float64 // forward series coefficients α1..α6
	beta   [6]float64 // inverse series coefficients β1..β6
}

// newTmerc builds a transverse Mercator on ellipsoid el with central meridian lon0 and
// latitude of origin lat0 (degrees), scale k0, false easting fe and northing fn.
func newTmerc(el ellipsoid, lon0, lat0, k0, fe, fn float64) *tmerc {
	n := el.f / (2 - el.f)
	n2 := n * n
	n3, n4, n5, n6 := n2*n, n2*n2, n2*n2*n, n2*n2*n2
	p := &tmerc{e: el.ecc(), es: el.es(), lon0: lon0 * deg}
	p.k0A = k0 * el.a / (1 + n) * (1 + n2/4 + n4/64 + n6/256)
	p.alpha = [6]float64{
		n/2 - 2*n2/3 + 5*n3/16 + 41*n4/180 - 127*n5/288 + 7891*n6/37800,
		13*n2/48 - 3*n3/5 + 557*n4/1440 + 281*n5/630 - 1983433*n6/1935360,
		61*n3/240 - 103*n4/140 + 15061*n5/26880 + 167603*n6/181440,
		49561*n4/161280 - 179*n5/168 + 6601661*n6/7257600,
		34729*n5/80640 - 3418889*n6/1995840,
		212378941 * n6 / 319334400,
	}
	p.beta = [6]float64{
		n/2 - 2*n2/3 + 37*n3/96 - n4/360 - 81*n5/512 + 96199*n6/604800,
		n2/48 + n3/15 - 437*n4/1440 + 46*n5/105 - 1118711*n6/3870720,
		17*n3/480 - 37*n4/840 - 209*n5/4480 + 5569*n6/90720,
		4397*n4/161280 - 11*n5/504 - 830251*n6/7257600,
		4583*n5/161280 - 108847*n6/3991680,
		20648693 * n6 / 638668800,
	}
	p.x0 = fe
	p.y0 = fn
	if lat0 != 0 {
		_, y := p.forward(p.lon0*rad, lat0)
		p.y0 = fn - (y - fn)
	}
	return p
}

// conformal returns tan of the conformal latitude for tau, tan of the geodetic latitude.
func (p *tmerc) conformal(tau float64) float64 {
	sig := math.Sinh(p.e * math.Atanh(p.e*tau/math.Hypot(1, tau)))
	return tau*math.Hypot(1, sig) - sig*math.Hypot(1, tau)
}

// forward implements projection.
func (p *tmerc) forward(lon, lat float64) (x, y float64) {
	lam := remainder(lon*deg - p.lon0)
	phi := lat * deg
	var taup float64
	switch {
	case phi >= math.Pi/2:
		taup = math.Inf(1)
	case phi <= -math.Pi/2:
		taup = math.Inf(-1)
	default:
		taup = p.conformal(math.Tan(phi))
	}
	var xip, etap float64
	if math.IsInf(taup, 0) {
		xip, etap = math.Copysign(math.Pi/2, taup), 0
	} else {
		xip = math.Atan2(taup, math.Cos(lam))
		etap = math.Asinh(math.Sin(lam) / math.Hypot(taup, math.Cos(lam)))
	}
	xi, eta := clenshaw(&p.alpha, xip, etap)
	return p.x0 + p.k0A*(etap+eta), p.y0 + p.k0A*(xip+xi)
}

// inverse implements projection.
func (p *tmerc) inverse(x, y float64) (lon, lat float64) {
	xi, eta := (y-p.y0)/p.k0A, (x-p.x0)/p.k0A
	dxi, deta := clenshaw(&p.beta, xi, eta)
	xip, etap := xi-dxi, eta-deta
	sh, c := math.Sinh(etap), math.Cos(xip)
	taup := math.Sin(xip) / math.Hypot(sh, c)
	lam := math.Atan2(sh, c)
	tau := p.geodetic(taup)
	return remainder(lam+p.lon0) * rad, math.Atan(tau) * rad
}

// geodetic inverts conformal by Newton's method (Karney 2011, equations 19-21): two or
// three steps reach the last bit.
func (p *tmerc) geodetic(taup float64) float64 {
	if math.IsInf(taup, 0) || math.IsNaN(taup) {
		return taup
	}
	tau := taup / (1 - p.es)
	for range 8 {
		tp := p.conformal(tau)
		d := (taup - tp) / math.Hypot(1, tp) * (1 + (1-p.es)*tau*tau) / ((1 - p.es) * math.Hypot(1, tau))
		tau += d
		if math.Abs(d) <= 1e-15*math.Max(1, math.Abs(tau)) {
			break
		}
	}
	return tau
}

// remainder brings an angle in radians into [-π, π].
func remainder(a float64) float64 {
	if a >= -math.Pi && a <= math.Pi {
		return a
	}
	return math.Remainder(a, 2*math.Pi)
}

// clenshaw sums c[j] sin(2(j+1)ζ) over j for ζ = xi + i·eta, by Clenshaw's recurrence in
// complex numbers (Karney 2011, section 4): four hyperbolic and trigonometric functions
// where the plain sum takes twenty-four. It returns the real and imaginary parts.
func clenshaw(c *[6]float64, xi, eta float64) (re, im float64) {
	s2, c2 := math.Sincos(2 * xi)
	e := math.Exp(2 * eta)
	sh2, ch2 := (e-1/e)/2, (e+1/e)/2
	sin2 := complex(s2*ch2, c2*sh2)  // sin 2ζ
	cos2 := complex(c2*ch2, -s2*sh2) // cos 2ζ
	twoCos := 2 * cos2
	var y0, y1, y2 complex128
	for j := len(c) - 1; j >= 0; j-- {
		y0 = complex(c[j], 0) + twoCos*y1 - y2
		y2, y1 = y1, y0
	}
	sum := sin2 * y1
	return real(sum), imag(sum)
}
