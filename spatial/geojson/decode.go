package geojson

import (
	"errors"
	"fmt"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// The decoder below reads each feature in one pass and gives the results
// the encoding/json based reader gave, which decoded a feature into
//
//	struct { Type string; ID, Geometry json.RawMessage; Properties map[string]any }
//
// and its geometry into
//
//	struct { Type string; Coordinates json.RawMessage; Geometries []json.RawMessage }
//
// So member names match case-insensitively, the last of repeated members
// wins (repeated "properties" objects merge), a member of the wrong JSON
// type refuses the feature with the error message encoding/json wrote, and
// a syntax error anywhere in the feature counts before any such problem.

// maxCollectionDepth bounds nested GeometryCollections.
const maxCollectionDepth = 8

// maxInterned bounds the property names kept for reuse across features.
const maxInterned = 4096

// typeErr is the message of the *json.UnmarshalTypeError encoding/json
// gave for a value of the wrong kind.
func typeErr(kind, target string) error {
	return errors.New("json: cannot unmarshal " + kind + " into " + target)
}

// kindOf names the JSON kind of the value starting with c.
func kindOf(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// feature decodes the member of "features" at pos. It refuses a feature
// with a *spatial.FeatureError; any other error is final.
func (r *Reader) feature() (*spatial.Feature, error) {
	s := &r.s
	s.pin = s.offset()
	s.depth = 0
	r.vertices = 0
	r.strs, r.idState = r.strs[:0], idNone
	if r.meter != nil {
		r.meter.StartFeature(r.opts.Limits)
	}
	defer func() { s.pin = -1 }()
	var fm featureMembers
	if r.spare != nil {
		clear(r.spare) // ReuseFeatures: the previous feature's map
		fm.props = r.spare
	}
	r.ptArena, r.ringArena = r.ptArena[:0], r.ringArena[:0]
	switch c := s.buf[s.pos]; c {
	case '{':
		if err := s.open(); err != nil {
			return nil, err
		}
		for first := true; ; first = false {
			more, err := s.next(first, '}')
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			k, err := s.key(&r.scratch)
			if err != nil {
				return nil, err
			}
			field := featureField(k)
			if err := s.colon(); err != nil {
				return nil, err
			}
			if err := r.featureMember(field, &fm); err != nil {
				return nil, err
			}
		}
	case 'n':
		if _, err := s.literal(); err != nil {
			return nil, err
		}
	default:
		if err := s.skip(false); err != nil {
			return nil, err
		}
		fm.terr = typeErr(kindOf(c), "Go value of type geojson.rawFeature")
	}
	fm.id = r.resolveID(fm.id)
	if r.reuse && fm.props != nil {
		r.spare = fm.props
	}
	idx := r.index
	r.index++
	var f *spatial.Feature
	if r.reuse {
		f = &r.feat
	}
	return fm.feature(idx, f)
}

// featureMembers is what the members of a feature said, as they are read in
// any order.
type featureMembers struct {
	id    string
	g     orb.Geometry
	gerr  error // refuses the geometry
	props map[string]any
	terr  error // the first member of the wrong JSON type
}

// featureMember reads the value of the feature member field at pos into fm.
func (r *Reader) featureMember(field string, fm *featureMembers) error {
	s := &r.s
	c := s.buf[s.pos]
	var err error
	switch field {
	case "type":
		if c != '"' && c != 'n' && fm.terr == nil {
			fm.terr = typeErr(kindOf(c), "Go struct field rawFeature.type of type string")
		}
		err = s.skip(false)
	case "id":
		fm.id, err = r.featureID()
		r.idState = idNone
		if fm.id == "" && err == nil && r.idB > r.idA {
			r.idState = idPending
		}
	case "geometry":
		fm.g, fm.gerr, err = r.geometry(0)
	case "properties":
		switch c {
		case 'n':
			_, err = s.literal()
			fm.props = nil
		case '{':
			fm.props, err = r.properties(fm.props, &fm.terr)
		default:
			if fm.terr == nil {
				fm.terr = typeErr(kindOf(c), "Go struct field rawFeature.properties of type map[string]interface {}")
			}
			err = s.skip(false)
		}
	default:
		err = s.skip(false)
	}
	return err
}

// feature makes the index-th feature of fm in f (a new one when nil), or refuses
// it: for a member of the wrong JSON type first, then for its geometry.
func (fm *featureMembers) feature(index int, f *spatial.Feature) (*spatial.Feature, error) {
	if fm.terr != nil {
		return nil, &spatial.FeatureError{ID: fm.id, Index: index, Err: fmt.Errorf("geojson: %w", fm.terr)}
	}
	if fm.gerr != nil {
		return nil, &spatial.FeatureError{ID: fm.id, Index: index, Err: fm.gerr}
	}
	props := fm.props
	if props == nil {
		props = map[string]any{}
	}
	if f == nil {
		return &spatial.Feature{ID: fm.id, Geometry: fm.g, Properties: props}, nil
	}
	*f = spatial.Feature{ID: fm.id, Geometry: fm.g, Properties: props}
	return f, nil
}

// featureField names the member of a feature key k stands for, "" for
// others.
func featureField(k []byte) string {
	for _, f := range [...]string{"type", "id", "geometry", "properties"} {
		if foldEq(k, f) {
			return f
		}
	}
	return ""
}

// featureID reads the "id" member at pos: a string as is, null as "", and
// anything else as written.
func (r *Reader) featureID() (string, error) {
	s := &r.s
	r.idA, r.idB = 0, 0
	if s.buf[s.pos] == '"' {
		// Kept in strs, to share the allocation of the string properties.
		b, err := s.str(&r.scratch)
		r.idA = len(r.strs)
		r.strs = append(r.strs, b...)
		r.idB = len(r.strs)
		return "", err
	}
	start := s.offset()
	if err := s.skip(false); err != nil {
		return "", err
	}
	raw := s.buf[start-s.base : s.pos]
	if string(raw) == "null" {
		return "", nil
	}
	return string(raw), nil
}

// intern returns b as a string, the same string for the same bytes.
func (r *Reader) intern(b []byte) string {
	if k, ok := r.keys[string(b)]; ok {
		return k
	}
	k := string(b)
	if len(r.keys) < maxInterned {
		r.keys[k] = k
	}
	return k
}

// properties decodes the object at pos into m, made when nil.
func (r *Reader) properties(m map[string]any, terr *error) (map[string]any, error) {
	s := &r.s
	if err := s.open(); err != nil {
		return m, err
	}
	if m == nil {
		m = make(map[string]any, r.nprops)
	}
	if r.idState != idPending {
		r.strs = r.strs[:0]
	}
	r.pending = r.pending[:0]
	n := 0
	for first := true; ; first = false {
		more, err := s.next(first, '}')
		if err != nil {
			return m, err
		}
		if !more {
			break
		}
		key, slot, err := r.propKey(n)
		if err != nil {
			return m, err
		}
		if err := s.colon(); err != nil {
			return m, err
		}
		var v any
		pending := false
		if s.buf[s.pos] == '"' {
			// Strings go into one allocation for the whole object.
			b, err := s.str(&r.scratch)
			if err != nil {
				return m, err
			}
			hit := false
			if slot != nil {
				v, hit = slot.findString(b)
			}
			if !hit {
				a := len(r.strs)
				r.strs = append(r.strs, b...)
				r.pending = append(r.pending, pendingStr{key: key, slot: n, a: a, b: len(r.strs)})
				pending = true
			}
		} else if v, err = r.value(slot, terr); err != nil {
			return m, err
		}
		size := len(m)
		m[key] = v
		if len(m) == size && len(r.pending) > 0 {
			// A repeated name: the strings before it come first.
			r.flush(m)
			if !pending {
				m[key] = v
			}
		}
		n++
	}
	r.flush(m)
	r.nprops = len(m)
	return m, nil
}

// propKey consumes the name of the n-th property of an object at pos and returns it and
// its slot (slot). When the name is the previous feature's n-th, as it mostly is, and
// written as is, it is compared in place instead of scanned.
func (r *Reader) propKey(n int) (string, *propSlot, error) {
	s := &r.s
	if n < len(r.slots) && r.slots[n].plain && s.atKey(r.slots[n].key) {
		return r.slots[n].key, &r.slots[n], nil
	}
	k, err := s.key(&r.scratch)
	if err != nil {
		return "", nil, err
	}
	key, slot := r.slot(n, k)
	return key, slot, nil
}

// slot returns the name k of the n-th property of an object and the slot that
// remembers that property across features: nil past maxInterned, a new one when
// the name is not the previous feature's.
func (r *Reader) slot(n int, k []byte) (string, *propSlot) {
	switch {
	case n < len(r.slots) && r.slots[n].key == string(k):
		return r.slots[n].key, &r.slots[n]
	case n < len(r.slots):
		r.slots[n] = propSlot{key: r.intern(k), plain: plainKey(k)}
		return r.slots[n].key, &r.slots[n]
	case n < maxInterned:
		r.slots = append(r.slots, propSlot{key: r.intern(k), plain: plainKey(k)})
		return r.slots[n].key, &r.slots[n]
	}
	return r.intern(k), nil
}

// pendingStr is a string property waiting in Reader.strs.
type pendingStr struct {
	key  string
	slot int
	a, b int
}

// flush stores the pending string properties in m.
func (r *Reader) flush(m map[string]any) {
	if len(r.pending) == 0 {
		return
	}
	all := string(r.strs)
	if r.idState == idPending {
		r.sid, r.idState = all[r.idA:r.idB], idResolved
	}
	for _, p := range r.pending {
		v := any(all[p.a:p.b])
		m[p.key] = v
		if p.slot < len(r.slots) {
			r.slots[p.slot].remember(v)
		}
	}
	r.strs, r.pending = r.strs[:0], r.pending[:0]
}

// value decodes the value at pos as encoding/json decodes into an any.
// A property's value (slot not nil) shares the boxed value of an equal
// string or number the property had lately, saving an allocation.
func (r *Reader) value(slot *propSlot, terr *error) (any, error) {
	s := &r.s
	switch c := s.buf[s.pos]; c {
	case '"':
		b, err := s.str(&r.scratch)
		if err != nil {
			return nil, err
		}
		if slot == nil {
			return string(b), nil
		}
		if v, ok := slot.findString(b); ok {
			return v, nil
		}
		v := any(string(b))
		slot.remember(v)
		return v, nil
	case '{':
		return r.objectValue(terr)
	case '[':
		return r.arrayValue(terr)
	case 't', 'f', 'n':
		c, err := s.literal()
		switch c {
		case 't':
			return true, err
		case 'f':
			return false, err
		}
		return nil, err
	default:
		f, ok, num, err := s.float()
		if err != nil {
			return nil, err
		}
		if !ok {
			if *terr == nil {
				*terr = typeErr("number "+string(num), "Go struct field rawFeature.properties of type float64")
			}
			return nil, nil
		}
		if slot == nil {
			return f, nil
		}
		if v, ok := slot.findFloat(f); ok {
			return v, nil
		}
		v := any(f)
		slot.remember(v)
		return v, nil
	}
}

// objectValue decodes the object at pos as a map[string]any.
func (r *Reader) objectValue(terr *error) (any, error) {
	s := &r.s
	if err := s.open(); err != nil {
		return nil, err
	}
	m := make(map[string]any)
	for first := true; ; first = false {
		more, err := s.next(first, '}')
		if err != nil {
			return nil, err
		}
		if !more {
			return m, nil
		}
		k, err := s.key(&r.scratch)
		if err != nil {
			return nil, err
		}
		key := r.intern(k)
		if err := s.colon(); err != nil {
			return nil, err
		}
		v, err := r.value(nil, terr)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

// arrayValue decodes the array at pos as a []any.
func (r *Reader) arrayValue(terr *error) (any, error) {
	s := &r.s
	if err := s.open(); err != nil {
		return nil, err
	}
	a := make([]any, 0)
	for first := true; ; first = false {
		more, err := s.next(first, ']')
		if err != nil {
			return nil, err
		}
		if !more {
			return a, nil
		}
		v, err := r.value(nil, terr)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
}

// The states of a feature's string "id" whose bytes wait in Reader.strs.
const (
	idNone     = iota // not a string, or not read: the id is featureMembers.id
	idPending         // strs[idA:idB]
	idResolved        // Reader.sid, made with the string properties
)

// resolveID returns the feature's id: id, or the string id kept in strs.
func (r *Reader) resolveID(id string) string {
	switch r.idState {
	case idPending:
		id = string(r.strs[r.idA:r.idB])
	case idResolved:
		id = r.sid
	}
	r.idState, r.sid = idNone, ""
	return id
}
