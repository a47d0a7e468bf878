package gpkg

import (
	"math/rand/v2"
	"testing"
)

// TestFidTable holds fidTable to a Go map through puts, deletes (which shift keys back)
// and growth, with keys crowded into few home slots so that probes run long and wrap.
func TestFidTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func(r *rand.Rand) uint32
	}{
		{"random keys", func(r *rand.Rand) uint32 { return r.Uint32() }},
		{"crowded home slots", func(r *rand.Rand) uint32 { return r.Uint32()<<22 | uint32(r.IntN(4)) | 1<<14 - 2 }},
		{"the zero key among others", func(r *rand.Rand) uint32 { return uint32(r.IntN(50)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var tab fidTable
			defer tab.free()
			want := map[uint32]int64{}
			var keys []uint32
			for i := range 20000 {
				k := tc.key(r)
				if r.IntN(4) == 0 && len(keys) > 0 {
					d := keys[r.IntN(len(keys))]
					tab.del(d)
					delete(want, d)
					continue
				}
				if err := tab.put(k, int64(i+1)); err != nil {
					t.Fatal(err)
				}
				want[k] = int64(i + 1)
				keys = append(keys, k)
			}
			if tab.len() != len(want) {
				t.Errorf("%d keys held, want %d", tab.len(), len(want))
			}
			for _, k := range keys {
				got, ok := tab.get(k)
				w, wok := want[k]
				if ok != wok || got != w {
					t.Fatalf("key %x: %d %v, want %d %v", k, got, ok, w, wok)
				}
			}
		})
	}
}

func TestFidTableRange(t *testing.T) {
	var tab fidTable
	defer tab.free()
	for _, fid := range []int64{0, 1 << 32} {
		if err := tab.put(7, fid); err != errFidRange {
			t.Errorf("fid %d: %v", fid, err)
		}
	}
}
