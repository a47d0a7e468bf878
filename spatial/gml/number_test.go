package gml

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/paulmach/orb"
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

// BenchmarkParsePosList parses the posList of a parcel of the sample
// server: 18 positions of 7-decimal latitudes and longitudes.
func BenchmarkParsePosList(b *testing.B) {
	text := []byte("48.0509779 11.4523169 48.0510743 11.4522695 48.0513057 11.4521105 48.0514354 11.4518547 48.0514645 11.451511 48.0514785 11.4510862 48.0513816 11.4507245 48.0512112 11.4506362 48.0509608 11.4505459 48.0507725 11.4505314 48.0505788 11.4506636 48.0504369 11.4508481 48.0503159 11.4510934 48.0503428 11.4514591 48.050403 11.4516753 48.0504366 11.452025 48.0506778 11.4522396 48.0509779 11.4523169")
	dst := make([]orb.Point, 0, 32)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var err error
		if dst, err = parsePosList(dst[:0], text, 2, -1); err != nil || len(dst) != 18 {
			b.Fatal(err, len(dst))
		}
	}
}

// strconvPosList is parsePosList as it was before parseFloat: fields split
// on white space, each kept one parsed by strconv.ParseFloat.
func strconvPosList(text []byte, dim int) ([]orb.Point, error) {
	var dst []orb.Point
	var p orb.Point
	k := 0
	for i := 0; ; {
		f, next := nextField(text, i)
		if f == nil {
			break
		}
		i = next
		if k < 2 {
			v, err := strconv.ParseFloat(string(f), 64)
			if err != nil {
				return dst, fmt.Errorf("coordinate %q is not a number", shorten(f))
			}
			p[k] = v
		}
		if k++; k == dim {
			dst = append(dst, p)
			k = 0
		}
	}
	if k != 0 {
		return dst, fmt.Errorf("gml:posList values do not divide into positions of %d", dim)
	}
	return dst, nil
}

// samePosList says whether parsePosList gives what strconvPosList does,
// bit for bit.
func samePosList(t *testing.T, text string, dim int) {
	t.Helper()
	want, werr := strconvPosList([]byte(text), dim)
	got, gerr := parsePosList(nil, []byte(text), dim, -1)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) || len(got) != len(want) {
		t.Fatalf("parsePosList(%q, %d) = %v, %v; want %v, %v", text, dim, got, gerr, want, werr)
	}
	for i := range got {
		for k := range 2 {
			if math.Float64bits(got[i][k]) != math.Float64bits(want[i][k]) {
				t.Fatalf("parsePosList(%q, %d)[%d] = %v; want %v", text, dim, i, got[i], want[i])
			}
		}
	}
}

func TestParsePosListIsStrconv(t *testing.T) {
	tests := []struct {
		name string
		text string
		dim  int
	}{
		{name: "sample server", text: "48.0509779 11.4523169 48.0510743 11.4522695\n48.0509779 11.4523169", dim: 2},
		{name: "white space around", text: " \t\r\n1.5 -2.25\n\n", dim: 2},
		{name: "third dimension not parsed", text: "1 2 abc 4 5 6", dim: 3},
		{name: "exponents", text: "1e5 2E-3 1e 2 1e12345 3", dim: 2},
		{name: "not a number", text: "1 2 3 x", dim: 2},
		{name: "number then junk", text: "1.5abc 2", dim: 2},
		{name: "odd count", text: "1 2 3", dim: 2},
		{name: "long and special", text: "123456789012345678901 0.1e-400 inf -0 +.5 5. 0x10 1_0", dim: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { samePosList(t, tt.text, tt.dim) })
	}
}

// FuzzParsePosList holds parsePosList to strconvPosList on any text.
func FuzzParsePosList(f *testing.F) {
	f.Add("48.0509779 11.4523169 48.0510743 11.4522695", uint8(2))
	f.Add("1e5 2E-3 1e 2 1e12345 3\t-0\n+.5", uint8(3))
	f.Fuzz(func(t *testing.T, text string, dim uint8) {
		samePosList(t, text, 2+int(dim%3))
	})
}
