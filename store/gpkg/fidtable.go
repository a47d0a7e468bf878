package gpkg

import (
	"errors"
	"math"
	"unsafe"
)

// fidTable maps the first 8 bytes of payload hashes to the fids of their rows, for a
// deferred payload-hash index (hashIndex): open addressing with linear probing, in
// memory outside the Go heap (offHeap). On the heap, a million entries of a Go map (30
// MB, live for the whole harvest) let the collector, paced by geoflow's GOGC=400, grow
// the heap to five times that: 227 MB of peak RSS for 1,000,000 features, against 12
// bytes a slot here and no effect on the collector's pace.
//
// Payload hashes are uniformly random, so a key's slot is its low bits. Key 0 marks an
// empty slot; the hash that starts with 8 zero bytes is kept apart (zero).
type fidTable struct {
	mem  []byte   // the mapping keys and fids live in
	keys []uint64 // 0 for an empty slot
	fids []uint32
	n    int // keys held in slots
	zero uint32
	// hasZero says the key 0 is held, with its fid in zero.
	hasZero bool
}

// fidTableMinSlots is the slots of a new table, and fidTableLoad the share of its slots a
// table fills before it doubles.
const (
	fidTableMinSlots = 1 << 14
	fidTableLoad     = 0.75
)

var errFidRange = errors.New("a fid past 4294967295 in a table being filled")

func (t *fidTable) len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}

// get returns the fid of key.
func (t *fidTable) get(key uint64) (int64, bool) {
	if key == 0 {
		if !t.hasZero {
			return 0, false
		}
		return int64(t.zero), true
	}
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.keys) - 1)
	for i := key & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case key:
			return int64(t.fids[i]), true
		case 0:
			return 0, false
		}
	}
}

// put sets key's fid.
func (t *fidTable) put(key uint64, fid int64) error {
	if fid < 0 || fid > math.MaxUint32 {
		return errFidRange
	}
	if key == 0 {
		t.zero, t.hasZero = uint32(fid), true
		return nil
	}
	if float64(t.n+1) > fidTableLoad*float64(len(t.keys)) {
		if err := t.grow(); err != nil {
			return err
		}
	}
	mask := uint64(len(t.keys) - 1)
	i := key & mask
	for t.keys[i] != 0 && t.keys[i] != key {
		i = (i + 1) & mask
	}
	if t.keys[i] == 0 {
		t.n++
	}
	t.keys[i], t.fids[i] = key, uint32(fid)
	return nil
}

// del removes key, shifting back the keys after it that probed past its slot, so that
// no lookup stops short of them.
func (t *fidTable) del(key uint64) {
	if key == 0 {
		t.hasZero = false
		return
	}
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.keys) - 1)
	i := key & mask
	for t.keys[i] != key {
		if t.keys[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.keys[j] != 0; j = (j + 1) & mask {
		// The key at j may fill the hole at i unless its own slot lies after i,
		// cyclically, up to j.
		if home := t.keys[j] & mask; (j-home)&mask >= (j-i)&mask {
			t.keys[i], t.fids[i] = t.keys[j], t.fids[j]
			i = j
		}
	}
	t.keys[i], t.fids[i] = 0, 0
	t.n--
}

// grow doubles the slots (or makes the first ones) and puts the keys back.
func (t *fidTable) grow() error {
	slots := max(fidTableMinSlots, 2*len(t.keys))
	mem, err := offHeap(slots * 12)
	if err != nil {
		return err
	}
	old := *t
	t.mem, t.n = mem, 0
	t.keys = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), slots)
	t.fids = unsafe.Slice((*uint32)(unsafe.Pointer(&mem[slots*8])), slots)
	for i, k := range old.keys {
		if k != 0 {
			_ = t.put(k, int64(old.fids[i])) // in range: it was put before
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
// for the same reason as fidTable's: 24 bytes a row, for every row a harvest inserts.
type offHeapLeaves struct {
	rtreeLeaves
	mem []byte
}

// reserve makes room for one more entry, doubling the entries' memory when full.
func (l *offHeapLeaves) reserve() error {
	if len(l.entries) < cap(l.entries) {
		return nil
	}
	size := max(1<<14, 2*cap(l.entries))
	mem, err := offHeap(size * int(unsafe.Sizeof(rtreeEntry{})))
	if err != nil {
		return err
	}
	entries := unsafe.Slice((*rtreeEntry)(unsafe.Pointer(&mem[0])), size)[:len(l.entries)]
	copy(entries, l.entries)
	if l.mem != nil {
		freeOffHeap(l.mem)
	}
	l.mem, l.entries = mem, entries
	return nil
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
