package gpkg

import (
	"errors"
	"math"
	"unsafe"
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
