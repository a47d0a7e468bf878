package flatgeobuf

import (
	"encoding/binary"
	"io"
	"math"
)

// The packed Hilbert R-tree of FlatGeobuf (GDAL's packedrtree.cpp): the features sorted
// by the Hilbert value of their boxes' centres, then a static tree built bottom-up, each
// node holding the box of nodeSize children. It is written level by level, the root
// first and the leaves (one per feature, in the features' order) last. Every node is 40
// bytes: its box (4 float64) and an offset, which in a leaf is the byte offset of its
// feature from the first feature and elsewhere the node number of its first child.

// nodeItemSize is the bytes of one node of the tree.
const nodeItemSize = 40

// hilbertMax is the largest cell coordinate on each axis of the Hilbert curve.
const hilbertMax = 1<<16 - 1

// levelBounds returns, for a tree of numItems leaves and nodes of nodeSize children,
// the node numbers [start, end) of each level, the leaves first and the root last;
// nodes are numbered from the root. numItems is at least 1, nodeSize at least 2. A
// single leaf has a root above it all the same, as in GDAL, whose readers count on it.
func levelBounds(numItems, nodeSize int) [][2]int {
	counts := []int{numItems}
	total := numItems
	for n := numItems; n != 1 || len(counts) == 1; {
		n = (n + nodeSize - 1) / nodeSize
		counts = append(counts, n)
		total += n
	}
	bounds := make([][2]int, len(counts))
	end := total
	for i, c := range counts {
		bounds[i] = [2]int{end - c, end}
		end -= c
	}
	return bounds
}

// node is one node of the tree above the leaves.
type node struct {
	box   bbox
	child uint64 // the node number of its first child
}

// upperLevels builds the levels of the tree above its leaves, whose boxes leaf gives
// in order, and returns their nodes in node-number order: the root first. Memory is
// one node (40 bytes) per nodeSize leaves, and fewer above.
func upperLevels(numItems, nodeSize int, leaf func(i int) bbox) []node {
	lb := levelBounds(numItems, nodeSize)
	leafStart := lb[0][0]
	nodes := make([]node, leafStart)
	boxOf := func(n int) bbox { // the box of node number n
		if n >= leafStart {
			return leaf(n - leafStart)
		}
		return nodes[n].box
	}
	for l := 0; l < len(lb)-1; l++ {
		pos, end := lb[l][0], lb[l][1]
		for next := lb[l+1][0]; pos < end; next++ {
			nd := node{box: emptyBox, child: uint64(pos)}
			for j := 0; j < nodeSize && pos < end; j++ {
				nd.box.union(boxOf(pos))
				pos++
			}
			nodes[next] = nd
		}
	}
	return nodes
}

// appendNode appends one node of the tree as the file holds it.
func appendNode(buf []byte, b bbox, offset uint64) []byte {
	for _, v := range [4]float64{b.minX, b.minY, b.maxX, b.maxY} {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	return binary.LittleEndian.AppendUint64(buf, offset)
}

// writeUpperLevels writes nodes, the tree above its leaves, to w.
func writeUpperLevels(w io.Writer, nodes []node) error {
	buf := make([]byte, 0, 1024*nodeItemSize)
	for i, nd := range nodes {
		buf = appendNode(buf, nd.box, nd.child)
		if len(buf) == cap(buf) || i == len(nodes)-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// hilbertValue is the Hilbert value of b's centre on a 65536×65536 grid over extent;
// an empty b (no geometry) gets 0, the lowest.
func hilbertValue(b, extent bbox) uint32 {
	if b.empty() {
		return 0
	}
	cell := func(v, lo, hi float64) uint32 {
		if hi <= lo {
			return 0
		}
		return uint32(math.Floor(hilbertMax * (v - lo) / (hi - lo)))
	}
	x := cell((b.minX+b.maxX)/2, extent.minX, extent.maxX)
	y := cell((b.minY+b.maxY)/2, extent.minY, extent.maxY)
	return hilbert(x, y)
}

// hilbert is the position of cell (x, y), each below 65536, on the Hilbert curve that
// fills the grid: the branch-free algorithm FlatGeobuf uses (after
// https://github.com/rawrunprotected/hilbert_curves, public domain).
func hilbert(x, y uint32) uint32 {
	a := x ^ y
	b := 0xFFFF ^ a
	c := 0xFFFF ^ (x | y)
	d := x & (y ^ 0xFFFF)

	A := a | (b >> 1)
	B := (a >> 1) ^ a
	C := ((c >> 1) ^ (b & (d >> 1))) ^ c
	D := ((a & (c >> 1)) ^ (d >> 1)) ^ d

	a, b, c, d = A, B, C, D
	A = (a & (a >> 2)) ^ (b & (b >> 2))
	B = (a & (b >> 2)) ^ (b & ((a ^ b) >> 2))
	C ^= (a & (c >> 2)) ^ (b & (d >> 2))
	D ^= (b & (c >> 2)) ^ ((a ^ b) & (d >> 2))

	a, b, c, d = A, B, C, D
	A = (a & (a >> 4)) ^ (b & (b >> 4))
	B = (a & (b >> 4)) ^ (b & ((a ^ b) >> 4))
	C ^= (a & (c >> 4)) ^ (b & (d >> 4))
	D ^= (b & (c >> 4)) ^ ((a ^ b) & (d >> 4))

	a, b, c, d = A, B, C, D
	C ^= (a & (c >> 8)) ^ (b & (d >> 8))
	D ^= (b & (c >> 8)) ^ ((a ^ b) & (d >> 8))

	a = C ^ (C >> 1)
	b = D ^ (D >> 1)

	i0 := x ^ y
	i1 := b | (0xFFFF ^ (i0 | a))

	return (interleave(i1) << 1) | interleave(i0)
}

// interleave spreads the low 16 bits of v to the even bits.
func interleave(v uint32) uint32 {
	v = (v | (v << 8)) & 0x00FF00FF
	v = (v | (v << 4)) & 0x0F0F0F0F
	v = (v | (v << 2)) & 0x33333333
	return (v | (v << 1)) & 0x55555555
}
