package spatial

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// oldCanonFloat is appendCanonFloat before integers below 2^53 took strconv.AppendInt.
func oldCanonFloat(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.IsNaN(f) || math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'g', -1, 64)
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func TestCanonFloatIntegers(t *testing.T) {
	tests := []struct {
		name string
		f    float64
	}{
		{"one", 1},
		{"minus one", -1},
		{"count", 4000000005},
		{"below 2^53", 1<<53 - 1},
		{"minus below 2^53", -(1<<53 - 1)},
		{"2^53", 1 << 53},
		{"above 2^53", 1<<53 + 2},
		{"1e20", 1e20},
		{"1e21", 1e21},
		{"fraction", 4591869.85},
		{"negative zero", math.Copysign(0, -1)},
		{"tiny", 5e-324},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := canonFloat(tt.f), oldCanonFloat(tt.f); got != want {
				t.Errorf("canonFloat(%v) = %q, want %q", tt.f, got, want)
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Trunc(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(60))))
		if got, want := canonFloat(f), oldCanonFloat(f); got != want {
			t.Fatalf("canonFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestShortLen(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{"empty", 0},
		{"one", 1},
		{"127", 127},
		{"128", 128},
		{"300", 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := make([]byte, tt.n)
			for i := range text {
				text[i] = byte('a' + i%26)
			}
			got := shortLen(append([]byte{'d', 0}, text...), 2)
			want := withLen(append([]byte{'d'}, text...), 1)
			if string(got) != string(want) {
				t.Errorf("shortLen of %d bytes = %q, want %q", tt.n, got, want)
			}
		})
	}
}
