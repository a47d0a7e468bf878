// One feature: its ID and its properties, whose values are text, nil, an
// href, flattened complex content or a []any for a repeated name, and its
// geometry property with its srsName and axis order.

package gml

import (
	"bytes"
	"encoding/xml"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/geoflow/geoflow/spatial"
)

// featureID returns gml:id, else the GML 2 fid attribute.
func (r *Reader) featureID(attrs []xml.Attr) string {
	fid := ""
	for _, a := range attrs {
		switch {
		case a.Name.Local == "id" && a.Name.Space != "" && r.resolve(a.Name.Space) == nsGML:
			return a.Value
		case a.Name.Local == "fid" && fid == "":
			fid = a.Value
		}
	}
	return fid
}

// feature reads the feature whose start element is on top of the stack.
// A refused feature gives a *spatial.FeatureError after the whole feature
// element has been consumed; final errors are in r.err.
func (r *Reader) feature(start xml.StartElement) (*spatial.Feature, error) {
	depth := len(r.stack)
	f := &r.feat
	if !r.reuse {
		f = new(spatial.Feature)
	}
	*f = spatial.Feature{ID: r.featureID(start.Attr), Properties: r.spare}
	if f.Properties != nil {
		clear(f.Properties) // ReuseFeatures: the previous feature's map
	} else if f.Properties = make(map[string]any, max(8, r.pb.prevN)); r.reuse {
		r.spare = f.Properties
	}
	r.ptArena, r.ringArena = r.ptArena[:0], r.ringArena[:0]
	r.pb.reset()
	r.featStart, r.featID, r.vertices = r.sc.tokStart, f.ID, 0
	if r.meter != nil {
		r.meter.StartFeature(r.lim)
	}
	r.sc.skipIDs = true // a geometry's gml:id, say, is never read
	defer func() { r.featStart, r.sc.skipIDs = -1, false }()
	featSRS := ""
	var geomSRS string
	for {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch tok.kind {
		case tkStart:
			t := tok.start
			cls := r.resolve(t.Name.Space)
			if cls == nsGML {
				if t.Name.Local == "boundedBy" {
					srs, err := r.envelopeSRS()
					if err != nil {
						return nil, err
					}
					featSRS = srs
					continue
				}
				if err := r.skip(); err != nil { // gml:name, gml:description ...
					return nil, err
				}
				continue
			}
			name := t.Name.Local
			val, g, srs, err := r.property(t, featSRS)
			if err != nil {
				if r.err != nil {
					return nil, r.err
				}
				if err := r.skipTo(depth - 1); err != nil {
					return nil, err
				}
				return nil, &spatial.FeatureError{ID: f.ID, Index: r.index, Err: err}
			}
			switch {
			case g != nil && f.Geometry == nil:
				f.Geometry = g
				geomSRS = srs
			case g != nil:
				r.pb.add(name, wkt.MarshalString(g))
			case val == textValue:
				r.pb.addText(name, r.text)
			case val != absent:
				r.pb.add(name, val)
			}
		case tkEnd:
			if len(r.stack) < depth {
				r.pb.flush(f.Properties)
				if r.meta.SRSName == "" {
					r.meta.SRSName = geomSRS
				}
				return f, nil
			}
		}
	}
}

// absent marks a property that is left out of Properties.
type absentT struct{}

var absent any = absentT{}

// addProp sets a property, turning a repeated name into a []any.
func addProp(m map[string]any, name string, v any) {
	old, ok := m[name]
	if !ok {
		m[name] = v
		return
	}
	if l, ok := old.(multiValue); ok {
		m[name] = append(l, v)
		return
	}
	m[name] = multiValue{old, v}
}

// multiValue is the []any of a repeated property; its own type tells a
// repetition from a first value that was already a list (never the case
// for GML text, but cheap to be sure).
type multiValue = []any

// property reads a feature property whose start element was just returned.
// It returns the value (absent to leave it out), or the geometry with its
// effective srsName. Errors other than final ones (r.err) refuse the feature.
func (r *Reader) property(start xml.StartElement, featSRS string) (any, orb.Geometry, string, error) {
	depth := len(r.stack)
	isNil, href := propertyAttrs(start.Attr) // before the next token reuses start.Attr
	r.text = r.text[:0]
	hasChild := false
	var g orb.Geometry
	srs := ""
	var flat []byte
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, nil, "", err
		}
		switch tok.kind {
		case tkText:
			t := tok.text
			if !hasChild {
				r.text = append(r.text, t...)
				if int64(len(r.text)) > r.lim.StringBytes {
					return nil, nil, "", r.tooLarge("max_string_bytes", r.lim.StringBytes)
				}
			}
		case tkStart:
			t := tok.start
			hasChild = true
			if g == nil && r.resolve(t.Name.Space) == nsGML && isGeometry(t.Name.Local) {
				if g, srs, err = r.geometryProperty(t, featSRS); err != nil {
					return nil, nil, "", err
				}
				continue
			}
			if flat, err = r.flatten(flat); err != nil {
				return nil, nil, "", err
			}
		}
	}
	if g != nil {
		return absent, g, srs, nil
	}
	if isText(hasChild, isNil, r.text, href) {
		return textValue, nil, "", nil // the feature keeps r.text (propBuf)
	}
	return propertyValue(hasChild, flat, isNil, r.text, href), nil, "", nil
}

// geometryProperty reads the geometry whose start t was just returned and
// returns it in x/y order with its effective srsName: the first declared
// on or in it, else the feature's (featSRS), the collection's or the
// default.
func (r *Reader) geometryProperty(t xml.StartElement, featSRS string) (orb.Geometry, string, error) {
	r.geomSRS = ""
	g, err := r.geometry(t, 0)
	if err != nil {
		return nil, "", err
	}
	srs := firstNonEmpty(r.geomSRS, featSRS, r.collSRS, r.opts.DefaultSRS)
	if r.latLon(srs) {
		g = spatial.SwapXY(g)
	}
	return g, srs, nil
}

// propertyAttrs returns what a property's attributes say of its value:
// nil when a prefixed nil attribute (xsi:nil) is "true" or "1", and the
// prefixed href (xlink:href), if any.
func propertyAttrs(attrs []xml.Attr) (isNil bool, href string) {
	for _, a := range attrs {
		switch a.Name.Local {
		case "nil":
			if a.Name.Space != "" && (a.Value == "true" || a.Value == "1") {
				isNil = true
			}
		case "href":
			if a.Name.Space != "" {
				href = a.Value
			}
		}
	}
	return isNil, href
}

// propertyValue decides the value of a property without geometry: the
// flattened text of its children when it has any (absent when that is
// blank), else nil when it is nil, else its href when it has neither text
// nor children, else its text as written.
func propertyValue(hasChild bool, flat []byte, isNil bool, text []byte, href string) any {
	switch {
	case hasChild:
		if s := strings.TrimSpace(string(flat)); s != "" {
			return s
		}
		return absent
	case isNil:
		return nil
	case len(text) == 0 && href != "":
		return href
	}
	return string(text)
}

// latLon is spatial.LatLonOrder for the response's WFS version, memoised
// for the last srsName: responses repeat one srsName on every geometry.
func (r *Reader) latLon(srs string) bool {
	if srs != r.memoSRS || !r.memoSet {
		r.memoSRS, r.memoSwap, r.memoSet = srs, spatial.LatLonOrder(srs, r.opts.WFSVersion), true
	}
	return r.memoSwap
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// flatten consumes the element whose start was just returned and appends
// the trimmed texts of its descendants, space separated, skipping GML
// geometry inside.
func (r *Reader) flatten(dst []byte) ([]byte, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		switch tok.kind {
		case tkText:
			t := tok.text
			if s := bytes.TrimSpace(t); len(s) > 0 {
				if len(dst) > 0 {
					dst = append(dst, ' ')
				}
				dst = append(dst, s...)
				if int64(len(dst)) > r.lim.StringBytes {
					return dst, r.tooLarge("max_string_bytes", r.lim.StringBytes)
				}
			}
		case tkStart:
			t := tok.start
			if r.resolve(t.Name.Space) == nsGML && isGeometry(t.Name.Local) {
				if err := r.skip(); err != nil {
					return dst, err
				}
			}
		}
	}
	return dst, nil
}
