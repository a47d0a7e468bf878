package gpkg

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLeafPairs: every row's leaf, once, in the order of the row ids, whether the ids
// are dense (found by array) or sparse (sorted).
func TestLeafPairs(t *testing.T) {
	tests := []struct {
		name string
		ids  [][]int64 // the cells of each leaf
	}{
		{name: "dense", ids: [][]int64{{5, 3, 9}, {4, 8}, {6, 7}}},
		{name: "dense with gaps", ids: [][]int64{{1, 12}, {3, 5}}},
		{name: "sparse", ids: [][]int64{{1, 1 << 40}, {7, -3}, {1 << 20}}},
		{name: "one", ids: [][]int64{{42}}},
		{name: "none", ids: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var all []*rnode
			want := map[int64]int64{}
			root := &rnode{number: 1, depth: 1}
			all = append(all, root)
			for i, ids := range tc.ids {
				leaf := &rnode{number: int64(i + 2)}
				for _, id := range ids {
					leaf.cells = append(leaf.cells, rtreeEntry{id: id})
					want[id] = leaf.number
				}
				root.kids = append(root.kids, leaf)
				all = append(all, leaf)
			}
			var got [][2]int64
			err := leafPairs(all, func(id, leaf int64) error { got = append(got, [2]int64{id, leaf}); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSortedFunc(got, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) }) || len(got) != len(want) {
				t.Fatalf("pairs %v: want %d, sorted by id", got, len(want))
			}
			for _, p := range got {
				if want[p[0]] != p[1] {
					t.Errorf("row %d in leaf %d, want %d", p[0], p[1], want[p[0]])
				}
			}
		})
	}
}

// TestSortBy: the entries in the order of their key, ties in their first order, as a
// stable sort with a comparator puts them, for keys of both signs, zeros of both signs,
// infinities and many ties, in slices of 0 to 20,000 entries.
func TestSortBy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 48.1, -11.5, float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.SmallestNonzeroFloat32}
	for _, n := range []int{0, 1, 2, 3, 7, 51, 52, 1000, 20000} {
		entries := make([]rtreeEntry, n)
		for i := range entries {
			x := float32(r.NormFloat64() * 100)
			if r.IntN(3) == 0 {
				x = values[r.IntN(len(values))]
			}
			entries[i] = rtreeEntry{id: int64(i), minx: x, maxx: x, miny: float32(r.IntN(5)), maxy: float32(r.IntN(5))}
		}
		for _, key := range []func(rtreeEntry) float32{rtreeEntry.cx, rtreeEntry.cy} {
			want := slices.Clone(entries)
			slices.SortStableFunc(want, func(a, b rtreeEntry) int { return cmp.Compare(orderedBits(key(a)), orderedBits(key(b))) })
			got := slices.Clone(entries)
			sortBy(got, make([]uint64, n+3), key)
			if !slices.Equal(got, want) {
				t.Fatalf("%d entries: sorted differently from a stable sort", n)
			}
			for i := 1; i < n; i++ {
				if key(got[i-1]) > key(got[i]) {
					t.Fatalf("%d entries: %v before %v", n, key(got[i-1]), key(got[i]))
				}
			}
		}
	}
}

// BenchmarkStrPack packs the leaves of 1,000,000 scattered boxes, as a harvest's R-tree
// build does.
func BenchmarkStrPack(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	leaves := make([]rtreeEntry, 1_000_000)
	for i := range leaves {
		x, y := float32(11+r.Float64()), float32(48+r.Float64())
		leaves[i] = rtreeEntry{id: int64(i + 1), minx: x, maxx: x + 1e-3, miny: y, maxy: y + 1e-3}
	}
	work := make([]rtreeEntry, len(leaves))
	for b.Loop() {
		copy(work, leaves)
		strPack(work, rtreeMaxCells)
	}
}
