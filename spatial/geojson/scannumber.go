// The scanner's numbers: checking a number against the JSON grammar and
// converting it exactly as strconv.ParseFloat does, with fast paths.

package geojson

import (
	"io"
	"strconv"
)

// number consumes the number at pos, checked against the JSON grammar, and
// returns its text (valid until the next read). A number is complete at
// the end of the input.
func (s *scanner) number() ([]byte, error) {
	j, state := s.pos, numStart
	for {
		for j < s.end {
			next := numTransitions[state][numClasses[s.buf[j]]]
			if next < numEnd {
				state = next
				j++
				continue
			}
			if next != numEnd {
				s.pos = j
				return nil, s.syntaxErr(numSyntaxWhere(next))
			}
			if int64(j-s.pos) > s.maxString {
				return nil, s.tooLarge("max_string_bytes", s.maxString)
			}
			num := s.buf[s.pos:j]
			s.pos = j
			return num, nil
		}
		k := j - s.pos
		if int64(k) > s.maxString {
			return nil, s.tooLarge("max_string_bytes", s.maxString)
		}
		if !s.fill() {
			if s.rerr == io.EOF && state.complete() {
				num := s.buf[s.pos:s.end]
				s.pos = s.end
				return num, nil
			}
			return nil, s.endErr()
		}
		j = s.pos + k
	}
}

// fastFloat converts the number at b[i:end] when it has at most 19
// digits, a mantissa below 2^53, no exponent and a byte after it, with the
// one correctly rounded division strconv.ParseFloat uses for those too. It
// returns where the number ends; ok is false when the caller must take
// the general path, which checks the syntax.
func fastFloat(b []byte, i, end int) (f float64, next int, ok bool) {
	neg := false
	if i < end && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var mant uint64
	if i < end && b[i] == '0' {
		i++
	} else {
		for ; i < end; i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
		}
		if i == start {
			return 0, 0, false
		}
	}
	digits, exp := i-start, 0
	if i < end && b[i] == '.' {
		i++
		k := i
		for ; i < end; i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
		}
		if i == k {
			return 0, 0, false
		}
		exp = k - i
		digits += i - k
	}
	if i >= end || b[i] == 'e' || b[i] == 'E' || digits > 19 || mant > 1<<53 || exp < -22 {
		return 0, 0, false
	}
	f = float64(mant)
	if exp < 0 {
		f /= pow10[-exp]
	}
	if neg {
		f = -f
	}
	return f, i, true
}

// float consumes the number at pos and converts it as parseNumber does.
// The text is returned only when ok is false.
func (s *scanner) float() (f float64, ok bool, text []byte, err error) {
	if f, next, ok := fastFloat(s.buf, s.pos, s.end); ok {
		s.pos = next
		return f, true, nil, nil
	}
	num, err := s.number()
	if err != nil {
		return 0, false, nil, err
	}
	f, ok = parseNumber(num)
	if !ok {
		text = num
	}
	return f, ok, text, nil
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber converts a number checked by scanner.number exactly as
// strconv.ParseFloat does; ok is false when ParseFloat fails (out of
// range). Numbers with at most 15 significant digits and a small exponent
// take the exact fast path strconv takes too: one correctly rounded
// multiplication or division of exactly represented values.
func parseNumber(b []byte) (f float64, ok bool) {
	i := 0
	neg := b[0] == '-'
	if neg {
		i++
	}
	var mant uint64
	nd, exp := 0, 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		if mant != 0 || b[i] != '0' {
			nd++
		}
		mant = mant*10 + uint64(b[i]-'0')
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			if mant != 0 || b[i] != '0' {
				nd++
			}
			mant = mant*10 + uint64(b[i]-'0')
			exp--
		}
	}
	if nd > 15 || i < len(b) {
		return slowNumber(b)
	}
	v := float64(mant)
	switch {
	case exp == 0:
	case exp >= -22:
		v /= pow10[-exp]
	default:
		return slowNumber(b)
	}
	if neg {
		v = -v
	}
	return v, true
}

func slowNumber(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}
