package geojson

import "math"

// recentValues is how many distinct boxed values a property slot keeps: enough for
// the low-cardinality columns (a use, a zone, a count) that make most of a layer's
// repeated values.
const recentValues = 8

// coldAfter is how many lookups a slot makes before its hit rate decides whether the
// whole cache is searched: a column of unique values (ids, dates) then costs one
// comparison, with the previous feature's value, instead of recentValues.
const coldAfter = 32

// propSlot remembers the n-th property of the previous features: its name, which the
// next feature usually repeats, and the boxed values it had lately, which the next
// feature's value, when equal, shares instead of boxing its own. Sharing is safe
// because a string or float64 held by an any cannot be changed in place.
type propSlot struct {
	key    string
	plain  bool              // key is written as is in JSON (plainKey)
	recent [recentValues]any // recent[last] is the previous feature's value
	last   uint8
	hits   uint16
	looks  uint16
}

// warm tells whether the slot searches all its recent values: until coldAfter
// lookups, and after them while at least one in four hits.
func (p *propSlot) warm() bool {
	return p.looks < coldAfter || p.hits >= p.looks/4
}

// count records a lookup that hit or not, halving the counts before they overflow so
// that the rate follows the column.
func (p *propSlot) count(hit bool) {
	if p.looks == math.MaxUint16 {
		p.looks, p.hits = p.looks/2, p.hits/2
	}
	p.looks++
	if hit {
		p.hits++
	}
}

// findString returns the boxed value among the recent ones that is the string b.
func (p *propSlot) findString(b []byte) (any, bool) {
	if s, ok := p.recent[p.last].(string); ok && s == string(b) {
		p.count(true)
		return p.recent[p.last], true
	}
	if p.warm() {
		for i, v := range p.recent {
			if s, ok := v.(string); ok && s == string(b) {
				p.last = uint8(i)
				p.count(true)
				return v, true
			}
		}
	}
	p.count(false)
	return nil, false
}

// findFloat returns the boxed value among the recent ones that is f, bit for bit.
func (p *propSlot) findFloat(f float64) (any, bool) {
	bits := math.Float64bits(f)
	if x, ok := p.recent[p.last].(float64); ok && math.Float64bits(x) == bits {
		p.count(true)
		return p.recent[p.last], true
	}
	if p.warm() {
		for i, v := range p.recent {
			if x, ok := v.(float64); ok && math.Float64bits(x) == bits {
				p.last = uint8(i)
				p.count(true)
				return v, true
			}
		}
	}
	p.count(false)
	return nil, false
}

// remember makes v the previous value, replacing the oldest one.
func (p *propSlot) remember(v any) {
	p.last = (p.last + 1) % recentValues
	p.recent[p.last] = v
}
