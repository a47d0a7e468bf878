package proj

import "github.com/paulmach/orb"

// codes lists every supported EPSG code, in ascending order (900913, the old alias of
// 3857, excepted).
func codes() []int {
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

// areaOfUse is the lon/lat box where code's CRS is meant to be used, as the EPSG registry
// bounds it (the UTM zones over their six degrees from the equator or 80°S to 84°N), and
// false for an unsupported code.
func areaOfUse(code int) (orb.Bound, bool) {
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
