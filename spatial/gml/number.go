// Numbers of coordinate text: strconv.ParseFloat's result without its
// general machinery for the plain decimals servers write.

package gml

import "strconv"

// exactPow10 are the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
	1e20, 1e21, 1e22,
}

// parseFloat is strconv.ParseFloat(string(f), 64), result and error alike.
// A plain decimal ([+-]digits[.digits][e[+-]digits]) whose significant
// digits fit 2^53 and whose decimal exponent is at most 22 either way is
// converted here as strconv's own exact path does: one rounding of an exact
// integer by an exact power of ten, so the result is the correctly rounded
// one strconv gives. Anything else goes to strconv.ParseFloat.
func parseFloat(f []byte) (float64, error) {
	if v, ok := parseDecimal(f); ok {
		return v, nil
	}
	return strconv.ParseFloat(string(f), 64)
}

// parseDecimal converts f when it is a plain decimal that converts
// exactly; false leaves it to strconv.
func parseDecimal(f []byte) (float64, bool) {
	i, neg := 0, false
	if len(f) > 0 && (f[0] == '-' || f[0] == '+') {
		neg, i = f[0] == '-', 1
	}
	var mant uint64
	exp, digits := 0, 0
	for ; i < len(f) && '0' <= f[i] && f[i] <= '9'; i++ {
		mant = mant*10 + uint64(f[i]-'0')
		digits++
	}
	if i < len(f) && f[i] == '.' {
		for i++; i < len(f) && '0' <= f[i] && f[i] <= '9'; i++ {
			mant = mant*10 + uint64(f[i]-'0')
			digits++
			exp--
		}
	}
	// 19 digits cannot overflow a uint64; fewer than 2^53 is checked below.
	if digits == 0 || digits > 19 {
		return 0, false
	}
	if i < len(f) && (f[i] == 'e' || f[i] == 'E') {
		e, ok := parseExp(f[i+1:])
		if !ok {
			return 0, false
		}
		exp += e
		i = len(f)
	}
	if i != len(f) || mant >= 1<<53 {
		return 0, false
	}
	v := float64(mant)
	if neg {
		v = -v
	}
	switch {
	case mant == 0:
		return v, true // ±0 whatever the exponent, as strconv
	case exp == 0:
		return v, true
	case exp > 0 && exp < len(exactPow10):
		return v * exactPow10[exp], true
	case exp < 0 && -exp < len(exactPow10):
		return v / exactPow10[-exp], true
	}
	return 0, false
}

// parseExp reads the [+-]digits of an exponent, at most four digits.
func parseExp(f []byte) (int, bool) {
	i, sign := 0, 1
	if len(f) > 0 && (f[0] == '-' || f[0] == '+') {
		if f[0] == '-' {
			sign = -1
		}
		i = 1
	}
	if i == len(f) || len(f)-i > 4 {
		return 0, false
	}
	e := 0
	for ; i < len(f); i++ {
		if f[i] < '0' || f[i] > '9' {
			return 0, false
		}
		e = e*10 + int(f[i]-'0')
	}
	return sign * e, true
}
