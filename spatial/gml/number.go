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
	v, n, ok := scanDecimal(f)
	return v, ok && n == len(f)
}

// scanDecimal converts the plain decimal that b starts with, [+-]digits
// [.digits][e[+-]digits], and returns its length, when it converts exactly.
// false: b does not start with one, or it needs strconv. What follows it is
// the caller's to judge.
func scanDecimal(b []byte) (v float64, n int, ok bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, i = b[0] == '-', 1
	}
	var mant uint64
	start := i
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		mant = mant*10 + uint64(c)
	}
	digits, exp := i-start, 0
	if i < len(b) && b[i] == '.' {
		i++
		frac := i
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			mant = mant*10 + uint64(c)
		}
		digits += i - frac
		exp = frac - i
	}
	// 19 digits cannot overflow a uint64; fewer than 2^53 is checked below.
	if digits == 0 || digits > 19 || mant >= 1<<53 {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		e, m, ok := scanExp(b[i+1:])
		if !ok {
			return 0, 0, false
		}
		exp += e
		i += 1 + m
	}
	v, ok = scaleExact(mant, exp, neg)
	return v, i, ok
}

// scaleExact is ±mant × 10^exp, rounded once, when mant < 2^53 and
// |exp| <= 22 (or mant is 0); false otherwise.
func scaleExact(mant uint64, exp int, neg bool) (float64, bool) {
	v := float64(mant)
	if neg {
		v = -v
	}
	switch {
	case mant == 0 || exp == 0:
		return v, true // ±0 whatever the exponent, as strconv
	case exp > 0 && exp < len(exactPow10):
		return v * exactPow10[exp], true
	case exp < 0 && -exp < len(exactPow10):
		return v / exactPow10[-exp], true
	}
	return 0, false
}

// scanExp reads the [+-]digits of an exponent that b starts with, at most
// four digits, and returns their length.
func scanExp(b []byte) (e, n int, ok bool) {
	i, sign := 0, 1
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		if b[0] == '-' {
			sign = -1
		}
		i = 1
	}
	start := i
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		e = e*10 + int(c)
	}
	if i == start || i-start > 4 {
		return 0, 0, false
	}
	return sign * e, i, true
}
