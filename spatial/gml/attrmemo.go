package gml

import "encoding/xml"

// attrMemo keeps the last value of the last few attribute names a document used, so
// that a value repeated on every feature (srsName, srsDimension, a codeSpace) is one
// string for the whole document instead of a new one each time.
type attrMemo struct {
	names [8]xml.Name
	vals  [8]string
	n     int // names in use
	next  int // the slot a new name takes when all are in use
}

// value returns data as a string: the one kept for name when equal, else a new one,
// then kept for name (in place of the name kept longest when all slots are in use).
func (m *attrMemo) value(name xml.Name, data []byte) string {
	for i := range m.n {
		if m.names[i] == name {
			if m.vals[i] != string(data) {
				m.vals[i] = string(data)
			}
			return m.vals[i]
		}
	}
	v := string(data)
	i := m.n
	if m.n < len(m.names) {
		m.n++
	} else {
		i, m.next = m.next, (m.next+1)%len(m.names)
	}
	m.names[i], m.vals[i] = name, v
	return v
}
