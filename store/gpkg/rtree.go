package gpkg

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/paulmach/orb"
)

// A bulk-loaded R-tree: SQLite's R*Tree module inserts one row at a time, choosing a
// leaf and splitting nodes as it goes (0.8 s per 100,000 rows in C SQLite, 1.3 s here).
// For a table filled once, as a first harvest fills it, the tree is packed instead, by
// Sort-Tile-Recursive (Leutenegger et al., 1997), and its nodes are written straight into
// the module's shadow tables in its own format, as GDAL does for GeoPackages since 3.6.
// rtreecheck() checks the result in the tests; from then on the triggers keep it.

// rtreeMaxCells is SQLite's RTREE_MAXCELLS, and rtreeCell the bytes of a 2-D cell: the
// rowid (8) and four float32 coordinates.
const (
	rtreeMaxCells = 51
	rtreeCell     = 8 + 4*4
)

// rtreeEntry is one box of the tree: a row of the table in a leaf, a node above.
type rtreeEntry struct {
	id                     int64 // the row's fid, or the child node's number
	minx, maxx, miny, maxy float32
}

func (e rtreeEntry) cx() float32 { return e.minx/2 + e.maxx/2 }
func (e rtreeEntry) cy() float32 { return e.miny/2 + e.maxy/2 }

// down and up round a double to the float32 at or below it and at or above it, as the
// R*Tree module stores boxes (rtreeValueDown, rtreeValueUp): a box never shrinks.
func down(d float64) float32 {
	f := float32(d)
	if float64(f) > d {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}

func up(d float64) float32 {
	f := float32(d)
	if float64(f) < d {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// bulkRTree fills the empty R-tree rtree (just created, in tx) with the envelopes of
// table.col, and returns the table's exact extent (ok false when it has no geometry).
func bulkRTree(ctx context.Context, tx *sql.Tx, table, col, rtree string) (ext orb.Bound, ok bool, err error) {
	// Reading a million heads allocates a hundred megabytes of driver values that die at
	// once, next to the boxes that live: collected at the default pace (geoflow's main
	// trades memory for fewer collections, GOGC=400), they pushed peak RSS from 65 MB
	// during a 1,000,000-feature harvest to 177 MB here.
	defer tightGC()()
	var count int
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s IS NOT NULL`, quote(table), quote(col))).Scan(&count); err != nil {
		return ext, false, err
	}
	// Only the head of each geometry is read: the envelope in its header (up to 8 + 64
	// bytes, for XYZM), or a point's coordinates. A geometry another tool wrote without
	// an envelope is read whole, below.
	const headHint = 72
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT fid, substr(%s, 1, %d), length(%[1]s) > %[2]d FROM %s WHERE %[1]s IS NOT NULL`,
		quote(col), headHint, quote(table)))
	if err != nil {
		return ext, false, err
	}
	leaves := rtreeLeaves{entries: make([]rtreeEntry, 0, count)}
	var whole []int64     // rows whose head did not hold their envelope
	var head sql.RawBytes // not copied: read before the next row
	for rows.Next() {
		var id int64
		var longer bool
		if err := rows.Scan(&id, &head, &longer); err != nil {
			rows.Close()
			return ext, false, err
		}
		if err := leaves.addBlob(id, head); err != nil && longer {
			whole = append(whole, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ext, false, err
	}
	for _, id := range whole {
		var blob []byte
		if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE fid = ?`, quote(col), quote(table)), id).Scan(&blob); err != nil {
			return ext, false, err
		}
		_ = leaves.addBlob(id, blob)
	}
	return leaves.ext, leaves.ok, leaves.write(ctx, tx, rtree)
}

// rtreeLeaves gathers the rows' boxes for a bulk-loaded R-tree, and their extent.
type rtreeLeaves struct {
	entries []rtreeEntry
	ext     orb.Bound
	ok      bool // ext holds a box
}

// addBlob adds row id's box: the envelope of its geometry blob (blobEnvelope), none
// for an empty geometry (which ST_IsEmpty and the triggers leave out). It fails,
// adding nothing, when the blob's head does not give its envelope.
func (l *rtreeLeaves) addBlob(id int64, blob []byte) error {
	env, empty, err := blobEnvelope(blob)
	if err != nil || empty {
		return err
	}
	if l.ok {
		l.ext = l.ext.Union(env)
	} else {
		l.ext, l.ok = env, true
	}
	l.entries = append(l.entries, rtreeEntry{id: id, minx: down(env.Min[0]), maxx: up(env.Max[0]), miny: down(env.Min[1]), maxy: up(env.Max[1])})
	return nil
}

// write packs the leaves into the empty R-tree rtree (just created, in tx). It
// reorders them.
func (l *rtreeLeaves) write(ctx context.Context, tx *sql.Tx, rtree string) error {
	if len(l.entries) == 0 {
		return nil
	}
	var pageSize int
	if err := tx.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return err
	}
	// The node size the module chose when it created the table (getNodeSize).
	nodeSize := min(pageSize-64, 4+rtreeCell*rtreeMaxCells)
	capacity := (nodeSize - 4) / rtreeCell
	return writeRTree(ctx, tx, rtree, nodeSize, packRTree(l.entries, capacity))
}

// rnode is one node of a packed tree: depth 0 for leaves, whose cells are rows; the
// cells of a node above are its kids, in the same order.
type rnode struct {
	number int64
	depth  int
	cells  []rtreeEntry
	kids   []*rnode
}

// packRTree packs leaves into a tree and returns every node, the root first, numbered
// from 1 as the module numbers its root.
func packRTree(leaves []rtreeEntry, capacity int) []*rnode {
	var level []*rnode
	for _, g := range strPack(leaves, capacity) {
		level = append(level, &rnode{cells: g})
	}
	var below []*rnode
	for depth := 1; len(level) > 1; depth++ {
		ents := make([]rtreeEntry, len(level))
		for i, n := range level {
			ents[i] = bound(n.cells)
			ents[i].id = int64(i)
		}
		var up []*rnode
		for _, g := range strPack(ents, capacity) {
			p := &rnode{depth: depth, cells: g, kids: make([]*rnode, len(g))}
			for i, c := range g {
				p.kids[i] = level[c.id]
			}
			up = append(up, p)
		}
		below = append(below, level...)
		level = up
	}
	all := append([]*rnode{level[0]}, below...)
	for i, n := range all {
		n.number = int64(i + 1)
	}
	return all
}

// strPack groups entries into nodes of at most capacity by Sort-Tile-Recursive: sorted
// by x into vertical slices of about sqrt(nodes) nodes each, each slice sorted by y and
// cut into nodes. It reorders entries.
func strPack(entries []rtreeEntry, capacity int) [][]rtreeEntry {
	nodes := (len(entries) + capacity - 1) / capacity
	keys := make([]uint64, len(entries))
	sortBy(entries, keys, rtreeEntry.cx)
	perSlice := int(math.Ceil(math.Sqrt(float64(nodes)))) * capacity
	var out [][]rtreeEntry
	for s := 0; s < len(entries); s += perSlice {
		slab := entries[s:min(s+perSlice, len(entries))]
		sortBy(slab, keys, rtreeEntry.cy)
		for i := 0; i < len(slab); i += capacity {
			end := min(i+capacity, len(slab))
			out = append(out, slab[i:end:end])
		}
	}
	return out
}

// sortBy sorts entries by key, ties in their present order, using keys (at least as
// long) as room: each entry's key as an order-preserving integer, with its place in the
// low half, sorts as a plain integer; the entries then move in place, cycle by cycle.
// slices.SortFunc with a comparator computing both centres took 0.7 s of CPU for the
// 1,000,000 boxes of a harvest into a GeoPackage.
func sortBy(entries []rtreeEntry, keys []uint64, key func(rtreeEntry) float32) {
	if len(entries) >= math.MaxUint32 {
		slices.SortStableFunc(entries, func(a, b rtreeEntry) int { return cmp.Compare(orderedBits(key(a)), orderedBits(key(b))) })
		return
	}
	keys = keys[:len(entries)]
	for i, e := range entries {
		keys[i] = uint64(orderedBits(key(e)))<<32 | uint64(i)
	}
	slices.Sort(keys)
	// Place j takes the entry that was at keys[j]'s low half; a place done is marked
	// with a value no key has (a place's index is below MaxUint32).
	const done = math.MaxUint64
	for i := range keys {
		if keys[i] == done {
			continue
		}
		first, j := entries[i], i
		for {
			from := int(uint32(keys[j]))
			keys[j] = done
			if from == i {
				entries[j] = first
				break
			}
			entries[j] = entries[from]
			j = from
		}
	}
}

// orderedBits maps a float32 to an integer of the same order: -0 just below 0, a NaN
// beyond the infinities of its sign.
func orderedBits(f float32) uint32 {
	b := math.Float32bits(f)
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

// bound is the box around cells.
func bound(cells []rtreeEntry) rtreeEntry {
	b := cells[0]
	for _, c := range cells[1:] {
		b.minx, b.maxx = min(b.minx, c.minx), max(b.maxx, c.maxx)
		b.miny, b.maxy = min(b.miny, c.miny), max(b.maxy, c.maxy)
	}
	return b
}

// nodeBlob is a node in the module's format: the tree's depth (read from the root only),
// the number of cells, then each cell's id and box, big-endian, padded to nodeSize.
func nodeBlob(n *rnode, nodeSize int) []byte {
	b := make([]byte, nodeSize)
	binary.BigEndian.PutUint16(b[0:], uint16(n.depth))
	binary.BigEndian.PutUint16(b[2:], uint16(len(n.cells)))
	for i, c := range n.cells {
		off := 4 + rtreeCell*i
		id := c.id
		if n.kids != nil {
			id = n.kids[i].number
		}
		binary.BigEndian.PutUint64(b[off:], uint64(id))
		binary.BigEndian.PutUint32(b[off+8:], math.Float32bits(c.minx))
		binary.BigEndian.PutUint32(b[off+12:], math.Float32bits(c.maxx))
		binary.BigEndian.PutUint32(b[off+16:], math.Float32bits(c.miny))
		binary.BigEndian.PutUint32(b[off+20:], math.Float32bits(c.maxy))
	}
	return b
}

// writeRTree writes a packed tree into rtree's shadow tables: every node, each node's
// parent, each row's leaf. Pairs of numbers go as one JSON array per statement (no
// parameter, hence no allocation, per number), node blobs as parameters.
func writeRTree(ctx context.Context, tx *sql.Tx, rtree string, nodeSize int, all []*rnode) error {
	nodes, err := tx.PrepareContext(ctx, fmt.Sprintf("INSERT OR REPLACE INTO %s (nodeno, data) VALUES (?, ?)", quote(rtree+"_node")))
	if err != nil {
		return err
	}
	defer nodes.Close()
	parents := &pairs{tx: tx, table: rtree + "_parent", cols: "nodeno, parentnode"}
	for _, n := range all {
		if _, err := nodes.ExecContext(ctx, n.number, nodeBlob(n, nodeSize)); err != nil {
			return err
		}
		for _, k := range n.kids {
			if err := parents.add(ctx, k.number, n.number); err != nil {
				return err
			}
		}
	}
	if err := parents.flush(ctx); err != nil {
		return err
	}
	if lo, hi, n := leafRange(all); denseIDs(lo, hi, n) {
		runs := &leafRuns{tx: tx, table: rtree + "_rowid"}
		if err := leafPairs(all, func(id, leaf int64) error { return runs.add(ctx, id, leaf) }); err != nil {
			return err
		}
		return runs.flush(ctx)
	}
	rowids := &pairs{tx: tx, table: rtree + "_rowid", cols: "rowid, nodeno"}
	if err := leafPairs(all, func(id, leaf int64) error { return rowids.add(ctx, id, leaf) }); err != nil {
		return err
	}
	return rowids.flush(ctx)
}

// leafRange is the lowest and highest id of the rows in all's leaves, and how many.
func leafRange(all []*rnode) (lo, hi int64, n int) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, nd := range all {
		if nd.kids == nil {
			for _, c := range nd.cells {
				lo, hi, n = min(lo, c.id), max(hi, c.id), n+1
			}
		}
	}
	return lo, hi, n
}

// denseIDs tells whether n ids from lo to hi are dense enough to be handled by an
// array over the range (4 bytes an id, for at most 16 bytes a row), as a table filled
// once has them.
func denseIDs(lo, hi int64, n int) bool {
	return n > 0 && hi-lo < 4*int64(n)
}

// leafRuns fills an R-tree's _rowid table from rows given in the order of their ids,
// dense: as JSON arrays of the leaf of each id from a first one on (0 for an id no row
// has, which is skipped), each number costing its digits and a comma rather than a
// nested pair that SQLite parses twice (json_each, then ->>).
type leafRuns struct {
	tx    *sql.Tx
	table string
	first int64 // the id of the run's first number
	buf   []byte
	n     int // numbers in buf
	st    *sql.Stmt
}

func (r *leafRuns) add(ctx context.Context, id, leaf int64) error {
	if r.n > 0 && id < r.first+int64(r.n) {
		return fmt.Errorf("rowid %d after %d: not in order", id, r.first+int64(r.n)-1)
	}
	if r.n == 0 {
		r.first, r.buf = id, append(r.buf[:0], '[')
	}
	for ; r.first+int64(r.n) < id; r.n++ {
		r.buf = append(r.buf, '0', ',') // an id without a row
	}
	r.buf = strconv.AppendInt(r.buf, leaf, 10)
	r.buf = append(r.buf, ',')
	if r.n++; r.n < pairsPerStatement*4 {
		return nil
	}
	return r.flush(ctx)
}

// flush inserts the run added since the last flush.
func (r *leafRuns) flush(ctx context.Context) error {
	if r.n == 0 {
		return nil
	}
	if r.st == nil {
		st, err := r.tx.PrepareContext(ctx, fmt.Sprintf(`INSERT OR REPLACE INTO %s (rowid, nodeno) SELECT ? + key, value FROM json_each(?) WHERE value <> 0`,
			quote(r.table)))
		if err != nil {
			return err
		}
		r.st = st
	}
	r.buf[len(r.buf)-1] = ']' // over the last comma
	_, err := r.st.ExecContext(ctx, r.first, string(r.buf))
	r.n = 0
	return err
}

// leafPairs calls add with each row's id and leaf in the order of the ids, so that the
// _rowid table's B-tree is appended to: in the leaves' order, a million inserts at
// random places took 9 s, its pages falling out of SQLite's cache and read back. When
// the ids are dense, as a table filled once has them, the leaf of each is found in an
// array by id (4 bytes an id); else the pairs are sorted (16 bytes a row).
func leafPairs(all []*rnode, add func(id, leaf int64) error) error {
	lo, hi, n := leafRange(all)
	if n == 0 {
		return nil
	}
	if denseIDs(lo, hi, n) && all[len(all)-1].number < math.MaxInt32 {
		leafOf := make([]int32, hi-lo+1) // 0: no row; node numbers start at 1
		for _, nd := range all {
			if nd.kids == nil {
				for _, c := range nd.cells {
					leafOf[c.id-lo] = int32(nd.number)
				}
			}
		}
		for i, leaf := range leafOf {
			if leaf != 0 {
				if err := add(lo+int64(i), int64(leaf)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	pairs := make([][2]int64, 0, n)
	for _, nd := range all {
		if nd.kids == nil {
			for _, c := range nd.cells {
				pairs = append(pairs, [2]int64{c.id, nd.number})
			}
		}
	}
	slices.SortFunc(pairs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for _, p := range pairs {
		if err := add(p[0], p[1]); err != nil {
			return err
		}
	}
	return nil
}

// pairs inserts pairs of integers into a table, pairsPerStatement at a time, passed as
// one JSON array of [a, b] arrays.
type pairs struct {
	tx          *sql.Tx
	table, cols string
	buf         []byte
	n           int
	st          *sql.Stmt
}

const pairsPerStatement = 5000

func (p *pairs) add(ctx context.Context, a, b int64) error {
	if p.n == 0 {
		p.buf = append(p.buf[:0], '[')
	} else {
		p.buf = append(p.buf, ',')
	}
	p.buf = append(p.buf, '[')
	p.buf = strconv.AppendInt(p.buf, a, 10)
	p.buf = append(p.buf, ',')
	p.buf = strconv.AppendInt(p.buf, b, 10)
	p.buf = append(p.buf, ']')
	p.n++
	if p.n < pairsPerStatement {
		return nil
	}
	return p.flush(ctx)
}

// flush inserts the pairs added since the last flush.
func (p *pairs) flush(ctx context.Context) error {
	if p.n == 0 {
		return nil
	}
	if p.st == nil {
		st, err := p.tx.PrepareContext(ctx, fmt.Sprintf(`INSERT OR REPLACE INTO %s (%s) SELECT value ->> 0, value ->> 1 FROM json_each(?)`,
			quote(p.table), p.cols))
		if err != nil {
			return err
		}
		p.st = st
	}
	p.buf = append(p.buf, ']')
	_, err := p.st.ExecContext(ctx, string(p.buf))
	p.n = 0
	return err
}

// rtreeNodeBound is the box around the cells of an R-tree node blob (nodeBlob's format),
// as the tree stores them (float32, rounded outward); ok false for a node without cells
// or a blob too short for the cells it says it has.
func rtreeNodeBound(blob []byte) (b orb.Bound, ok bool) {
	if len(blob) < 4 {
		return b, false
	}
	n := int(binary.BigEndian.Uint16(blob[2:]))
	if n == 0 || len(blob) < 4+n*rtreeCell {
		return b, false
	}
	f := func(off int) float64 { return float64(math.Float32frombits(binary.BigEndian.Uint32(blob[off:]))) }
	for i := range n {
		off := 4 + i*rtreeCell
		c := orb.Bound{Min: orb.Point{f(off + 8), f(off + 16)}, Max: orb.Point{f(off + 12), f(off + 20)}}
		if i == 0 {
			b = c
		} else {
			b = b.Union(c)
		}
	}
	return b, true
}
