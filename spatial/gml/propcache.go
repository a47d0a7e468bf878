package gml

// colSlots is how many distinct recent values a column keeps boxed.
const colSlots = 16

// column keeps the recent distinct text values of the property at one position of a
// feature, each with the one `any` holding it, so that a low-cardinality column (a
// zone, a land use, a flag) costs no new string nor boxing for a value seen lately.
// An `any` holding a string is immutable and may be shared between features.
type column struct {
	name  string
	vals  [colSlots]string
	boxed [colSlots]any
	n     int // slots in use
	last  int // the slot of the value kept last
	// seen and hits count lookups; a column whose values rarely repeat (an ID, a
	// measure) is then looked up only in its last value, which costs one compare.
	seen, hits int
}

// narrow says whether c's values have shown they rarely repeat: at least 64 lookups
// and fewer than one in 8 hits.
func (c *column) narrow() bool { return c.seen >= 64 && c.hits*8 < c.seen }

// lookup returns the value kept equal to text, if any.
func (c *column) lookup(text []byte) (any, bool) {
	c.seen++
	if c.n > 0 && c.vals[c.last] == string(text) {
		c.hits++
		return c.boxed[c.last], true
	}
	if c.narrow() {
		return nil, false
	}
	for i := range c.n {
		if c.vals[i] == string(text) {
			c.hits++
			c.last = i
			return c.boxed[i], true
		}
	}
	return nil, false
}

// keep remembers s, boxed as v, in place of the value kept longest when all slots are
// in use (only the one slot of the last value when narrow).
func (c *column) keep(s string, v any) {
	i := c.n
	switch {
	case c.narrow() && c.n > 0:
		i = c.last
	case c.n < colSlots:
		c.n++
	default:
		i = (c.last + 1) % colSlots
	}
	c.vals[i], c.boxed[i], c.last = s, v, i
}

// reset starts c over for the property name.
func (c *column) reset(name string) {
	*c = column{name: name}
}
