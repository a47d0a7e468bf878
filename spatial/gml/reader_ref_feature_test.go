package gml

// The reference reader's features and their properties (see reader_ref_test.go).

import (
	"bytes"
	"encoding/xml"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/geoflow/geoflow/spatial"
)

// featureID returns gml:id, else the GML 2 fid attribute.
func (r *refReader) featureID(attrs []xml.Attr) string {
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
func (r *refReader) feature(start xml.StartElement) (*spatial.Feature, error) {
	depth := len(r.stack)
	f := &spatial.Feature{ID: r.featureID(start.Attr), Properties: make(map[string]any, 8)}
	featSRS := ""
	var geomSRS string
	for {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
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
				addProp(f.Properties, name, wkt.MarshalString(g))
			case val != absent:
				addProp(f.Properties, name, val)
			}
		case xml.EndElement:
			if len(r.stack) < depth {
				if r.meta.SRSName == "" {
					r.meta.SRSName = geomSRS
				}
				return f, nil
			}
		}
	}
}

// property reads a feature property whose start element was just returned.
// It returns the value (absent to leave it out), or the geometry with its
// effective srsName. Errors other than final ones (r.err) refuse the feature.
func (r *refReader) property(start xml.StartElement, featSRS string) (any, orb.Geometry, string, error) {
	depth := len(r.stack)
	isNil, href := false, ""
	for _, a := range start.Attr {
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
		switch t := tok.(type) {
		case xml.CharData:
			if !hasChild {
				r.text = append(r.text, t...)
			}
		case xml.StartElement:
			hasChild = true
			if g == nil && r.resolve(t.Name.Space) == nsGML && isGeometry(t.Name.Local) {
				r.geomSRS = ""
				gg, err := r.geometry(t, 0)
				if err != nil {
					return nil, nil, "", err
				}
				srs = firstNonEmpty(r.geomSRS, featSRS, r.collSRS, r.opts.DefaultSRS)
				if r.latLon(srs) {
					gg = spatial.SwapXY(gg)
				}
				g = gg
				continue
			}
			var err2 error
			flat, err2 = r.flatten(flat)
			if err2 != nil {
				return nil, nil, "", err2
			}
		}
	}
	switch {
	case g != nil:
		return absent, g, srs, nil
	case hasChild:
		if s := strings.TrimSpace(string(flat)); s != "" {
			return s, nil, "", nil
		}
		return absent, nil, "", nil
	case isNil:
		return nil, nil, "", nil
	case len(r.text) == 0 && href != "":
		return href, nil, "", nil
	}
	return string(r.text), nil, "", nil
}

// latLon is spatial.LatLonOrder for the response's WFS version, memoised
// for the last srsName: responses repeat one srsName on every geometry.
func (r *refReader) latLon(srs string) bool {
	if srs != r.memoSRS || !r.memoSet {
		r.memoSRS, r.memoSwap, r.memoSet = srs, spatial.LatLonOrder(srs, r.opts.WFSVersion), true
	}
	return r.memoSwap
}

// flatten consumes the element whose start was just returned and appends
// the trimmed texts of its descendants, space separated, skipping GML
// geometry inside.
func (r *refReader) flatten(dst []byte) ([]byte, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		switch t := tok.(type) {
		case xml.CharData:
			if s := bytes.TrimSpace(t); len(s) > 0 {
				if len(dst) > 0 {
					dst = append(dst, ' ')
				}
				dst = append(dst, s...)
			}
		case xml.StartElement:
			if r.resolve(t.Name.Space) == nsGML && isGeometry(t.Name.Local) {
				if err := r.skip(); err != nil {
					return dst, err
				}
			}
		}
	}
	return dst, nil
}
