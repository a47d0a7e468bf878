package gml

// textValue is what property returns for a value that is its text as written (the last
// case of propertyValue), left in Reader.text for the feature's propBuf to keep.
type textValueT struct{}

var textValue any = textValueT{}

// isText says whether propertyValue would return text itself as the value.
func isText(hasChild, isNil bool, text []byte, href string) bool {
	return !hasChild && !isNil && (len(text) > 0 || href == "")
}

// propBuf collects one feature's properties in document order and sets them at its
// end, so that all its new text values cost one string allocation together rather than
// one each, and a value equal to one recently seen at the same place (column) reuses
// that value as it is, without a new one.
type propBuf struct {
	props []pendingProp
	strs  []byte
	cols  []column // by position in the feature
	prevN int      // the previous feature's property count
}

// pendingProp is one property: val, or the text strs[a:b] when text.
type pendingProp struct {
	name string
	val  any
	a, b int
	text bool
}

// reset starts a feature.
func (p *propBuf) reset() { p.props, p.strs = p.props[:0], p.strs[:0] }

// add keeps v for the property name.
func (p *propBuf) add(name string, v any) {
	p.props = append(p.props, pendingProp{name: name, val: v})
}

// addText keeps a copy of text as the value of the property name.
func (p *propBuf) addText(name string, text []byte) {
	a := len(p.strs)
	p.strs = append(p.strs, text...)
	p.props = append(p.props, pendingProp{name: name, a: a, b: len(p.strs), text: true})
}

// flush sets the properties kept in m, in document order, as addProp would have one by
// one.
func (p *propBuf) flush(m map[string]any) {
	var all string
	for i := range p.props {
		q := &p.props[i]
		if q.text {
			q.val = p.textValue(i, q, &all)
		}
		addProp(m, q.name, q.val)
	}
	p.prevN = len(p.props)
}

// textValue is the value of the text property q at position i: the one its column
// kept when equal, else a substring of all, the feature's new texts as one string
// (made on first use), then kept by the column.
func (p *propBuf) textValue(i int, q *pendingProp, all *string) any {
	if i >= len(p.cols) {
		p.cols = append(p.cols, make([]column, i+1-len(p.cols))...)
	}
	c := &p.cols[i]
	if c.name != q.name {
		c.reset(q.name)
	} else if v, ok := c.lookup(p.strs[q.a:q.b]); ok {
		return v
	}
	if *all == "" {
		*all = string(p.strs)
	}
	s := (*all)[q.a:q.b]
	var v any = s
	c.keep(s, v)
	return v
}
