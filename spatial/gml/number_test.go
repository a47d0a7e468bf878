package gml

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// sameFloat says whether parseFloat(s) is strconv.ParseFloat(s, 64): the
// same bits (so -0 and NaN payloads count) and the same error text.
func sameFloat(t *testing.T, s string) {
	t.Helper()
	want, werr := strconv.ParseFloat(s, 64)
	got, gerr := parseFloat([]byte(s))
	if math.Float64bits(got) != math.Float64bits(want) || (werr == nil) != (gerr == nil) ||
		werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("parseFloat(%q) = %v (%#x), %v; strconv.ParseFloat gives %v (%#x), %v",
			s, got, math.Float64bits(got), gerr, want, math.Float64bits(want), werr)
	}
}

func TestParseFloatIsStrconv(t *testing.T) {
	tests := []struct {
		name string
		in   []string
	}{
		{name: "coordinates", in: []string{"48.0509779", "11.4523169", "-122.4194155", "37.7749295", "0.1", "3.1415926535", "500000.123", "5654321.98"}},
		{name: "integers", in: []string{"0", "1", "-1", "+7", "9007199254740991", "9007199254740992", "9007199254740993", "18446744073709551615", "1234567890123456789", "12345678901234567890"}},
		{name: "zeros", in: []string{"-0", "+0", "0.0", "-0.000", "0e5", "-0e-400", "0e99999", "000000000000000000000000.5"}},
		{name: "exponents", in: []string{"1e22", "1e23", "1e-22", "1e-23", "1.5E+3", "2.5e-3", "1e", "1e+", "1e-", "1e0001", "1e00001", "123456789e-22", "9007199254740991e22", "4.9e-324", "1.7976931348623157e308", "1e309", "-1e400"}},
		{name: "dots", in: []string{"5.", ".5", "-.5", "+.5", ".", "-.", "1..2", "1.2.3"}},
		{name: "rounding", in: []string{"0.1", "0.3", "2.2250738585072011e-308", "9007199254740993.0", "0.30000000000000004", "123456.789012345678901"}},
		{name: "not numbers", in: []string{"", "-", "+", "1,5", "1_000", "0x1p-2", "0x10", "inf", "-Inf", "NaN", "infinity", "1 ", " 1", "1e5x", "٣"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.in {
				sameFloat(t, s)
			}
		})
	}
}

// TestParseFloatRandomDecimals holds parseFloat to strconv on a million
// decimals of the shapes servers write: up to 19 digits, a dot anywhere,
// sometimes a sign and an exponent.
func TestParseFloatRandomDecimals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1_000_000
	if testing.Short() {
		n = 50_000
	}
	var b []byte
	for range n {
		b = b[:0]
		switch rng.IntN(4) {
		case 0:
			b = append(b, '-')
		case 1:
			b = append(b, '+')
		}
		digits := 1 + rng.IntN(20)
		dot := rng.IntN(digits + 2)
		for k := range digits {
			if k == dot {
				b = append(b, '.')
			}
			b = append(b, byte('0'+rng.IntN(10)))
		}
		if rng.IntN(4) == 0 {
			b = strconv.AppendInt(append(b, 'e'), int64(rng.IntN(61)-30), 10)
		}
		sameFloat(t, string(b))
	}
}

// FuzzParseFloat holds parseFloat to strconv.ParseFloat on any text.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"48.0509779", "-0", "1e22", "1e23", "9007199254740993", ".5", "5.", "1e", "0x1p-2", "inf", "1_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameFloat(t, s) })
}
