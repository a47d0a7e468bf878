package gpkg

import (
	"errors"
	"math"
	"unsafe"

	"github.com/paulmach/orb"
)

// fidTable maps keys of 32 bits (a payload hash's first 4 bytes: hashKey) to the fids
// of their rows, for a deferred payload-hash index (hashIndex): open addressing with
// linear probing, in memory outside the Go heap (offHeap). On the heap, a million
// entries of a Go map (30 MB, live for the whole harvest) let the collector, paced by
// geoflow's GOGC=400, grow the heap to five times that: 227 MB of peak RSS for
// 1,000,000 features, against 8 bytes a slot here and no effect on the collector's pace.
//
// A slot is the key in its high half and the fid in its low half; fid 0, which SQLite
// never gives a row, marks an empty slot. Payload hashes are uniformly random, so a key's
// slot is its low bits.
type fidTable struct {
	mem   []byte   // the mapping the slots live in
	slots []uint64 // key<<32 | fid
	n     int
}

// fidTableMinSlots is the slots of a new table, and fidTableLoad the share of its slots a
// table fills before it doubles.
const (
	fidTableMinSlots = 1 << 14
	fidTableLoad     = 0.75
)

var errFidRange = errors.New("a fid past 4294967295 in a table being filled")

func (t *fidTable) len() int { return t.n }

// get returns the fid of key.
func (t *fidTable) get(key uint32) (int64, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := uint64(key) & mask; ; i = (i + 1) & mask {
		switch v := t.slots[i]; {
		case v == 0:
			return 0, false
		case uint32(v>>32) == key:
			return int64(uint32(v)), true
		}
	}
}

// put sets key's fid.
func (t *fidTable) put(key uint32, fid int64) error {
	if fid <= 0 || fid > math.MaxUint32 {
		return errFidRange
	}
	if float64(t.n+1) > fidTableLoad*float64(len(t.slots)) {
		if err := t.grow(); err != nil {
			return err
		}
	}
	mask := uint64(len(t.slots) - 1)
	i := uint64(key) & mask
	for t.slots[i] != 0 && uint32(t.slots[i]>>32) != key {
		i = (i + 1) & mask
	}
	if t.slots[i] == 0 {
		t.n++
	}
	t.slots[i] = uint64(key)<<32 | uint64(fid)
	return nil
}

// del removes key, shifting back the keys after it that probed past its slot, so that
// no lookup stops short of them.
func (t *fidTable) del(key uint32) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := uint64(key) & mask
	for uint32(t.slots[i]>>32) != key || t.slots[i] == 0 {
		if t.slots[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		// The key at j may fill the hole at i unless its own slot lies after i,
		// cyclically, up to j.
		if home := (t.slots[j] >> 32) & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
	t.n--
}

// grow doubles the slots (or makes the first ones) and puts the keys back.
func (t *fidTable) grow() error {
	size := max(fidTableMinSlots, 2*len(t.slots))
	mem, err := offHeap(size * 8)
	if err != nil {
		return err
	}
	old := *t
	t.mem, t.n = mem, 0
	t.slots = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), size)
	for _, v := range old.slots {
		if v != 0 {
			_ = t.put(uint32(v>>32), int64(uint32(v))) // in range: it was put before
		}
	}
	old.free()
	return nil
}

// free gives the table's memory back; the table is empty after.
func (t *fidTable) free() {
	if t.mem != nil {
		freeOffHeap(t.mem)
	}
	*t = fidTable{}
}

// offHeapLeaves are R-tree leaves (rtreeLeaves) whose entries live outside the Go heap,
// for the same reason as fidTable's.
type offHeapLeaves struct {
	rtreeLeaves
	mem []byte
}

func newOffHeapLeaves(n int) (*offHeapLeaves, error) {
	l := &offHeapLeaves{}
	if n == 0 {
		return l, nil
	}
	mem, err := offHeap(n * int(unsafe.Sizeof(rtreeEntry{})))
	if err != nil {
		return nil, err
	}
	l.mem, l.entries = mem, unsafe.Slice((*rtreeEntry)(unsafe.Pointer(&mem[0])), n)[:0]
	return l, nil
}

// free gives the entries' memory back; the leaves are empty after.
func (l *offHeapLeaves) free() {
	if l == nil {
		return
	}
	if l.mem != nil {
		freeOffHeap(l.mem)
	}
	*l = offHeapLeaves{}
}

// fidBoxes are the R-tree boxes of a table's rows by fid, from fid 1, as the tree keeps
// them (float32, rounded outward), outside the Go heap: 16 bytes a row, where leaves
// with their ids would take 24 for as long as the harvest runs. A row without a box
// (no geometry, or an empty one) has NaNs. ext is the exact box around them all.
type fidBoxes struct {
	mem   []byte
	boxes []box32 // boxes[fid-1]
	ext   orb.Bound
	ok    bool // ext holds a box
}

type box32 struct{ minx, maxx, miny, maxy float32 }

var noBox = box32{float32(math.NaN()), float32(math.NaN()), float32(math.NaN()), float32(math.NaN())}

// set records row fid's box, env.
func (l *fidBoxes) set(fid int64, env orb.Bound) error {
	i := int(fid - 1)
	if fid < 1 || fid > math.MaxUint32 {
		return errFidRange
	}
	for i >= len(l.boxes) {
		if len(l.boxes) == cap(l.boxes) {
			if err := l.grow(); err != nil {
				return err
			}
		}
		l.boxes = append(l.boxes, noBox)
	}
	l.boxes[i] = box32{down(env.Min[0]), up(env.Max[0]), down(env.Min[1]), up(env.Max[1])}
	if l.ok {
		l.ext = l.ext.Union(env)
	} else {
		l.ext, l.ok = env, true
	}
	return nil
}

func (l *fidBoxes) grow() error {
	size := max(1<<14, 2*cap(l.boxes))
	mem, err := offHeap(size * int(unsafe.Sizeof(box32{})))
	if err != nil {
		return err
	}
	boxes := unsafe.Slice((*box32)(unsafe.Pointer(&mem[0])), size)[:len(l.boxes)]
	copy(boxes, l.boxes)
	if l.mem != nil {
		freeOffHeap(l.mem)
	}
	l.mem, l.boxes = mem, boxes
	return nil
}

// leaves are the boxes as R-tree leaves, with their fids, and their extent.
func (l *fidBoxes) leaves() (*offHeapLeaves, error) {
	n := 0
	for _, b := range l.boxes {
		if b.minx == b.minx { // not NaN
			n++
		}
	}
	out, err := newOffHeapLeaves(n)
	if err != nil {
		return nil, err
	}
	for i, b := range l.boxes {
		if b.minx == b.minx {
			out.entries = append(out.entries, rtreeEntry{id: int64(i) + 1, minx: b.minx, maxx: b.maxx, miny: b.miny, maxy: b.maxy})
		}
	}
	out.ext, out.ok = l.ext, l.ok
	return out, nil
}

// free gives the boxes' memory back; none are left.
func (l *fidBoxes) free() {
	if l.mem != nil {
		freeOffHeap(l.mem)
	}
	*l = fidBoxes{}
}
