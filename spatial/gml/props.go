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
// end, so that all its text values cost one string allocation together rather than
// one each, and a value equal to the previous feature's at the same place reuses that
// value as it is, without a new one.
type propBuf struct {
	props []pendingProp
	strs  []byte
	prev  []pendingProp // the previous feature's properties, val set
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
			if i < len(p.prev) && p.prev[i].name == q.name {
				if s, ok := p.prev[i].val.(string); ok && s == string(p.strs[q.a:q.b]) {
					q.val = p.prev[i].val
					addProp(m, q.name, q.val)
					continue
				}
			}
			if all == "" {
				all = string(p.strs)
			}
			q.val = all[q.a:q.b]
		}
		addProp(m, q.name, q.val)
	}
	p.prev, p.props = p.props, p.prev[:0]
}
