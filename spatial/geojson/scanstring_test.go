package geojson

import (
	"math/rand/v2"
	"testing"
)

// TestPlainRun checks plainRun against plainByte: every byte it skips stands for
// itself, and it stops on the first byte that does not or within the last 7 bytes.
// Each byte value is tried at each place of runs of 0 to 24 bytes, and random runs
// with one to three bytes of each kind.
func TestPlainRun(t *testing.T) {
	check := func(b []byte, j int) {
		t.Helper()
		k := plainRun(b, j, len(b))
		for i := j; i < k; i++ {
			if !plainByte[b[i]] {
				t.Fatalf("plainRun(%q, %d) = %d, past byte %#x at %d", b, j, k, b[i], i)
			}
		}
		if k < len(b)-7 && plainByte[b[k]] {
			t.Fatalf("plainRun(%q, %d) = %d, stopped at plain byte %q with %d bytes left", b, j, k, b[k], len(b)-k)
		}
	}
	for n := 0; n <= 24; n++ {
		for p := 0; p < n; p++ {
			for c := 0; c < 256; c++ {
				b := make([]byte, n)
				for i := range b {
					b[i] = 'a' + byte(i%26)
				}
				b[p] = byte(c)
				check(b, 0)
				check(b, min(p, 3))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	special := []byte{'"', '\\', 0, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xff, '!', '#', '[', ']'}
	for range 20000 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + rng.IntN(0x5f))
		}
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = special[rng.IntN(len(special))]
		}
		check(b, rng.IntN(len(b)))
	}
}
