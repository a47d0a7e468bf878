package gml

import "encoding/xml"

// nameCache keeps the names a scanner's nsname has read, as written and as
// split, two ways set-associative by a hash of their bytes, and for each
// place it was read in (a start tag, an end tag or an attribute) the name
// read right after it there the last time.
type nameCache struct {
	entries  [nameCacheSize]nameEntry
	prev     uint16   // the slot of the name read last
	prevRole nameRole // where it was read
}

// nameRole is where a name is read: what an element's start and end tags,
// which name it alike, tell apart.
type nameRole uint8

const (
	roleStart nameRole = iota
	roleEnd
	roleAttr
)

// nameEntry is a name as written (raw, "" in an unused slot) and as split.
type nameEntry struct {
	raw  string
	name xml.Name
	next [3]uint16 // by nameRole, the slot of the name read after this one the last time
}

const (
	nameCacheBits = 9
	nameCacheSize = 1 << nameCacheBits
)

// nameSlot is the first of the two slots that may keep the name written as
// b (not empty): a multiplicative hash of its length, middle and last eight
// bytes.
func nameSlot[T string | []byte](b T) int {
	n := len(b)
	h := uint64(n)
	for i := max(n-8, 0); i < n; i++ {
		h = h<<8 ^ uint64(b[i])
	}
	h ^= uint64(b[n/2]) << 56
	return int((h*0x9E3779B97F4A7C15)>>(64-nameCacheBits)) &^ 1
}

// predicted is the entry of the name read after the last one the last
// time; its raw is "" or any other name when there is none.
func (c *nameCache) predicted() *nameEntry {
	return &c.entries[c.entries[c.prev].next[c.prevRole]]
}

// lookup returns the slot keeping the name written as b (not empty), or -1.
func (c *nameCache) lookup(b []byte) int {
	i := nameSlot(b)
	switch string(b) {
	case c.entries[i].raw:
		return i
	case c.entries[i+1].raw:
		return i + 1
	}
	return -1
}

// add keeps name, written raw, in the first of its slots, moving what was
// there to the second, and returns the slot.
func (c *nameCache) add(raw string, name xml.Name) int {
	i := nameSlot(raw)
	c.entries[i+1] = c.entries[i]
	c.entries[i] = nameEntry{raw: raw, name: name}
	return i
}

// read notes that the name in slot i was read, in role, after the last one.
func (c *nameCache) read(i int, role nameRole) {
	c.entries[c.prev].next[c.prevRole] = uint16(i)
	c.prev, c.prevRole = uint16(i), role
}
