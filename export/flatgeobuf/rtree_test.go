package flatgeobuf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLevelBounds(t *testing.T) {
	for _, tc := range []struct {
		name            string
		items, nodeSize int
		want            [][2]int
	}{
		{"one item has a root above it", 1, 16, [][2]int{{1, 2}, {0, 1}}},
		{"a full node", 16, 16, [][2]int{{1, 17}, {0, 1}}},
		{"one more", 17, 16, [][2]int{{3, 20}, {1, 3}, {0, 1}}},
		{"three levels", 257, 16, [][2]int{{20, 277}, {3, 20}, {1, 3}, {0, 1}}},
		{"node size 2", 5, 2, [][2]int{{6, 11}, {3, 6}, {1, 3}, {0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := levelBounds(tc.items, tc.nodeSize); !slices.Equal(got, tc.want) {
				t.Fatalf("levelBounds(%d, %d) = %v, want %v", tc.items, tc.nodeSize, got, tc.want)
			}
			if got, want := treeSize(tc.items, tc.nodeSize), int64(tc.want[0][1])*nodeItemSize; got != want {
				t.Fatalf("treeSize = %d, want %d", got, want)
			}
		})
	}
	if treeSize(0, 16) != 0 {
		t.Fatal("an empty layer has a tree")
	}
}

// TestHilbert checks the curve where it can be seen whole: its first 4096 cells fill the
// 64×64 corner at the origin, each next to the one before.
func TestHilbert(t *testing.T) {
	const side = 64
	at := make([][2]uint32, side*side)
	seen := make([]bool, side*side)
	for x := uint32(0); x < side; x++ {
		for y := uint32(0); y < side; y++ {
			h := hilbert(x, y)
			if h >= side*side || seen[h] {
				t.Fatalf("hilbert(%d, %d) = %d: outside the corner's 0..%d or twice", x, y, h, side*side-1)
			}
			seen[h], at[h] = true, [2]uint32{x, y}
		}
	}
	for i := 1; i < len(at); i++ {
		dx, dy := int(at[i][0])-int(at[i-1][0]), int(at[i][1])-int(at[i-1][1])
		if dx*dx+dy*dy != 1 {
			t.Fatalf("cells %d %v and %d %v are not neighbours", i-1, at[i-1], i, at[i])
		}
	}
	if got := hilbert(hilbertMax, 0); got != math.MaxUint32 {
		t.Errorf("the curve ends at %d, not in the far corner", got)
	}
}

func TestHilbertValue(t *testing.T) {
	ext := bbox{0, 0, 10, 10}
	for _, tc := range []struct {
		name string
		box  bbox
		want uint32
	}{
		{"origin", bbox{0, 0, 0, 0}, 0},
		{"far corner", bbox{10, 0, 10, 0}, math.MaxUint32},
		{"centre of a box", bbox{0, 0, 0.0001, 0.0001}, hilbert(0, 0)},
		{"empty box", emptyBox, 0},
		{"degenerate extent", bbox{5, 5, 5, 5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ext
			if tc.name == "degenerate extent" {
				e = bbox{5, 5, 5, 5}
			}
			if got := hilbertValue(tc.box, e); got != tc.want {
				t.Fatalf("hilbertValue(%v) = %d, want %d", tc.box, got, tc.want)
			}
		})
	}
}

// searchTree finds the leaves whose boxes intersect q the way a reader does: from the
// root down, through the nodes whose boxes intersect it.
func searchTree(upper []node, leaves []bbox, nodeSize int, q bbox) []int {
	lb := levelBounds(len(leaves), nodeSize)
	leafStart := lb[0][0]
	boxOf := func(n int) bbox {
		if n >= leafStart {
			return leaves[n-leafStart]
		}
		return upper[n].box
	}
	intersects := func(b bbox) bool {
		return !(b.maxX < q.minX || b.maxY < q.minY || b.minX > q.maxX || b.minY > q.maxY)
	}
	var found []int
	var walk func(n, level int)
	walk = func(n, level int) {
		if !intersects(boxOf(n)) {
			return
		}
		if level == 0 {
			found = append(found, n-leafStart)
			return
		}
		first := int(upper[n].child)
		for c := first; c < min(first+nodeSize, lb[level-1][1]); c++ {
			walk(c, level-1)
		}
	}
	walk(0, len(lb)-1)
	slices.Sort(found)
	return found
}

func TestUpperLevels(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name            string
		items, nodeSize int
	}{
		{"one", 1, 16}, {"one node", 16, 16}, {"two levels", 200, 16}, {"deep", 1000, 2}, {"odd", 777, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaves := make([]bbox, tc.items)
			for i := range leaves {
				if i%50 == 7 {
					leaves[i] = emptyBox // a feature without geometry
					continue
				}
				x, y := rnd.Float64()*100, rnd.Float64()*100
				leaves[i] = bbox{x, y, x + rnd.Float64()*3, y + rnd.Float64()*3}
			}
			upper := upperLevels(tc.items, tc.nodeSize, func(i int) bbox { return leaves[i] })
			if want := levelBounds(tc.items, tc.nodeSize)[0][0]; len(upper) != want {
				t.Fatalf("%d nodes above the leaves, want %d", len(upper), want)
			}
			for _, q := range []bbox{{10, 10, 20, 20}, {0, 0, 100, 100}, {50.5, 0, 50.6, 100}, {-5, -5, -1, -1}} {
				var want []int
				for i, b := range leaves {
					if !(b.maxX < q.minX || b.maxY < q.minY || b.minX > q.maxX || b.minY > q.maxY) {
						want = append(want, i)
					}
				}
				if got := searchTree(upper, leaves, tc.nodeSize, q); !slices.Equal(got, want) {
					t.Errorf("query %v found %d leaves, brute force %d", q, len(got), len(want))
				}
			}
		})
	}
}

// treeSize is the bytes of the tree of numItems leaves (0 for none).
func treeSize(numItems, nodeSize int) int64 {
	if numItems == 0 {
		return 0
	}
	lb := levelBounds(numItems, nodeSize)
	return int64(lb[0][1]) * nodeItemSize
}
