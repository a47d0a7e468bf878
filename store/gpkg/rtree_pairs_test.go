package gpkg

import (
	"cmp"
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
