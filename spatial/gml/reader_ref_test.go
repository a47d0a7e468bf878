package gml

// The Reader as it was before its own tokenizer (scan.go): the same
// decoding on encoding/xml's RawToken. It is kept as the reference of the
// differential tests (diff_test.go): the two must agree on every input.

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

// refReader decodes a GML GetFeature response one feature at a time. It
// implements spatial.Reader. A Reader is not safe for concurrent use.
type refReader struct {
	opts Options
	cr   *sniff.CountingReader
	br   *bufio.Reader
	d    *xml.Decoder

	stack []frame
	ns    []binding

	started bool
	single  bool // the root element is itself the feature
	err     error
	meta    spatial.Meta
	collSRS string
	index   int
	geomSRS string // first srsName declared inside the geometry being read

	text    []byte // scratch for character data
	pts     []orb.Point
	typeLoc string
	root    xml.StartElement // kept for a single-feature document

	memoSRS           string
	memoSwap, memoSet bool
}

// newRefReader returns a Reader of the GML response in r. It reads r only when
// Next is called, through its own buffer.
func newRefReader(r io.Reader, opts Options) *refReader {
	cr := &sniff.CountingReader{R: r}
	br := bufio.NewReaderSize(cr, 64<<10)
	d := xml.NewDecoder(br)
	d.CharsetReader = charsetReader
	tl := opts.TypeName
	if i := strings.LastIndexByte(tl, ':'); i >= 0 {
		tl = tl[i+1:]
	}
	return &refReader{opts: opts, cr: cr, br: br, d: d, meta: spatial.UnknownMeta(), typeLoc: tl}
}

// Meta returns what the collection element said: numberMatched,
// numberReturned (numberOfFeatures in WFS 1.1), next, and the declared
// srsName. It is complete once the first Next call has returned.
func (r *refReader) Meta() spatial.Meta { return r.meta }

// resolve returns the namespace class bound to prefix. An undeclared prefix
// that is conventionally gml, wfs, ows or xsi is taken as such: sloppy
// servers exist.
func (r *refReader) resolve(prefix string) nsClass {
	for i := len(r.ns) - 1; i >= 0; i-- {
		if r.ns[i].prefix == prefix {
			return r.ns[i].class
		}
	}
	switch prefix {
	case "gml":
		return nsGML
	case "wfs":
		return nsWFS
	case "ows", "ogc":
		return nsOWS
	case "xsi":
		return nsXSI
	case "xlink":
		return nsXLink
	}
	return nsOther
}

// token returns the next StartElement, EndElement or CharData, keeping the
// element and namespace stacks, and checking that end tags match. Errors are
// final: they are stored in r.err, classified.
func (r *refReader) token() (xml.Token, error) {
	for {
		tok, err := r.d.RawToken()
		if err != nil {
			return nil, r.fail(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			nns := 0
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" {
					r.ns = append(r.ns, binding{prefix: a.Name.Local, class: classify(a.Value)})
					nns++
				} else if a.Name.Space == "" && a.Name.Local == "xmlns" {
					r.ns = append(r.ns, binding{prefix: "", class: classify(a.Value)})
					nns++
				}
			}
			r.stack = append(r.stack, frame{prefix: t.Name.Space, local: t.Name.Local, nns: nns})
			return tok, nil // not t: boxing it again would allocate
		case xml.EndElement:
			n := len(r.stack)
			if n == 0 {
				return nil, r.fail(&xml.SyntaxError{Msg: "unexpected end element </" + t.Name.Local + ">", Line: 0})
			}
			top := r.stack[n-1]
			if top.prefix != t.Name.Space || top.local != t.Name.Local {
				return nil, r.fail(&xml.SyntaxError{Msg: fmt.Sprintf("element <%s> closed by </%s>", qname(top.prefix, top.local), qname(t.Name.Space, t.Name.Local))})
			}
			r.ns = r.ns[:len(r.ns)-top.nns]
			r.stack = r.stack[:n-1]
			return tok, nil
		case xml.CharData:
			return tok, nil
		}
	}
}

// fail classifies a decoding error, stores it as final and returns it.
func (r *refReader) fail(err error) error {
	if r.err != nil {
		return r.err
	}
	switch {
	case err == io.EOF:
		// RawToken reports a clean io.EOF even inside open elements; every
		// caller of token expects more, so this is a cut-off body.
		err = &spatial.TruncatedError{Offset: r.d.InputOffset(), Err: io.ErrUnexpectedEOF}
	case sniff.XMLTruncated(err):
		err = &spatial.TruncatedError{Offset: r.d.InputOffset(), Err: err}
	default:
		var se *xml.SyntaxError
		if asSyntax(err, &se) {
			err = fmt.Errorf("gml: malformed XML near byte %d: %w", r.d.InputOffset(), err)
		} else {
			err = fmt.Errorf("gml: reading response: %w", err)
		}
	}
	r.err = err
	return err
}

// skip consumes the rest of the element whose start was just returned.
func (r *refReader) skip() error {
	return r.skipTo(len(r.stack) - 1)
}

// skipTo consumes tokens until the element stack is depth deep.
func (r *refReader) skipTo(depth int) error {
	for len(r.stack) > depth {
		if _, err := r.token(); err != nil {
			return err
		}
	}
	return nil
}

// Next returns the next feature, io.EOF after the last one, a
// *spatial.FeatureError for a refused feature (call Next again to go on),
// or a final error.
func (r *refReader) Next() (*spatial.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.started {
		r.started = true
		if err := r.begin(); err != nil {
			if r.err == nil {
				r.err = err
			}
			return nil, r.err
		}
		if r.single {
			f, err := r.feature(r.root)
			r.index++
			if r.err != nil {
				return nil, r.err
			}
			r.err = io.EOF
			return f, err
		}
	}
	if r.single {
		return nil, io.EOF
	}
	for {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := len(r.stack)
			parent := r.stack[n-2].kind
			cls := r.resolve(t.Name.Space)
			switch parent {
			case kCollection:
				switch {
				case (cls == nsWFS || cls == nsGML) && (t.Name.Local == "member" || t.Name.Local == "featureMember" || t.Name.Local == "featureMembers"):
					r.stack[n-1].kind = kMember
				case (cls == nsGML || cls == nsWFS) && t.Name.Local == "boundedBy":
					srs, err := r.envelopeSRS()
					if err != nil {
						return nil, err
					}
					if r.collSRS == "" {
						r.collSRS = srs
						if r.meta.SRSName == "" {
							r.meta.SRSName = srs
						}
					}
				case cls == nsWFS && t.Name.Local == "truncatedResponse":
					return nil, r.truncatedResponse()
				default:
					if err := r.skip(); err != nil {
						return nil, err
					}
				}
			case kMember:
				if isCollection(t.Name.Local, cls) {
					r.stack[n-1].kind = kCollection
					continue
				}
				f, err := r.feature(t)
				r.index++
				if r.err != nil {
					return nil, r.err
				}
				return f, err
			default:
				if err := r.skip(); err != nil {
					return nil, err
				}
			}
		case xml.EndElement:
			if len(r.stack) == 0 {
				r.err = io.EOF
				return nil, io.EOF
			}
		}
	}
}

// begin reads up to the root element and decides what the body is.
func (r *refReader) begin() error {
	peek, perr := r.br.Peek(512)
	switch k := sniff.Kind(peek); k {
	case "empty":
		if perr != nil && perr != io.EOF {
			return fmt.Errorf("gml: reading response: %w", perr)
		}
		return &spatial.TruncatedError{Offset: int64(len(peek)), Err: io.ErrUnexpectedEOF}
	case "json", "text", "html":
		return &spatial.NotFeaturesError{Kind: k, Snippet: spatial.Snippet(peek, 200)}
	}
	for {
		tok, err := r.token()
		if err != nil {
			var se *xml.SyntaxError
			if sniff.XMLTruncated(r.err) || !errors.As(r.err, &se) {
				return err
			}
			// Malformed before the root element: not a GML document.
			r.err = &spatial.NotFeaturesError{Kind: "xml", Snippet: spatial.Snippet(peek, 200)}
			return r.err
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		cls := r.resolve(start.Name.Space)
		local := start.Name.Local
		switch {
		case spatial.IsExceptionReportElement(local):
			rep, err := spatial.DecodeExceptionReport(r.d, start)
			if err != nil {
				return err
			}
			return rep
		case isCollection(local, cls) || local == "FeatureCollection":
			r.stack[len(r.stack)-1].kind = kCollection
			r.meta.NumberMatched = countAttr(start.Attr, "numberMatched")
			r.meta.NumberReturned = countAttr(start.Attr, "numberReturned")
			if r.meta.NumberReturned < 0 {
				r.meta.NumberReturned = countAttr(start.Attr, "numberOfFeatures")
			}
			r.meta.Next = attrValue(start.Attr, "next")
			return nil
		case strings.EqualFold(local, "html"):
			return &spatial.NotFeaturesError{Kind: "html", Snippet: spatial.Snippet(peek, 200)}
		case cls != nsGML && cls != nsWFS && cls != nsOWS &&
			(local == r.typeLoc && r.typeLoc != "" || r.hasGMLID(start.Attr)):
			r.single = true
			r.root = start
			return nil
		}
		return &spatial.NotFeaturesError{Kind: "xml", Snippet: spatial.Snippet(peek, 200)}
	}
}

func (r *refReader) hasGMLID(attrs []xml.Attr) bool {
	for _, a := range attrs {
		if a.Name.Local == "id" && a.Name.Space != "" && r.resolve(a.Name.Space) == nsGML {
			return true
		}
	}
	return false
}

// truncatedResponse reads a WFS 2.0 wfs:truncatedResponse, in which the
// server says it stopped the response early, and returns its exception.
func (r *refReader) truncatedResponse() error {
	depth := len(r.stack) - 1
	for len(r.stack) > depth {
		tok, err := r.token()
		if err != nil {
			return err
		}
		if t, ok := tok.(xml.StartElement); ok && spatial.IsExceptionReportElement(t.Name.Local) {
			r.stack = r.stack[:len(r.stack)-1] // DecodeExceptionReport consumes it
			r.ns = r.ns[:len(r.ns)-nsCount(t.Attr)]
			rep, err := spatial.DecodeExceptionReport(r.d, t)
			if err != nil {
				r.err = err
				return err
			}
			r.err = rep
			return rep
		}
	}
	r.err = &spatial.ExceptionReport{Code: "ResponseTruncated", Text: "server sent wfs:truncatedResponse"}
	return r.err
}

// envelopeSRS reads a gml:boundedBy whose start was just returned and
// returns the srsName of its Envelope or Box, if any.
func (r *refReader) envelopeSRS() (string, error) {
	depth := len(r.stack) - 1
	srs := ""
	for len(r.stack) > depth {
		tok, err := r.token()
		if err != nil {
			return "", err
		}
		if t, ok := tok.(xml.StartElement); ok && srs == "" {
			srs = attrValue(t.Attr, "srsName")
		}
	}
	return srs, nil
}

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

// geomAttrs applies the srsName and srsDimension of a geometry element.
func (r *refReader) geomAttrs(start xml.StartElement, dim int) int {
	for _, a := range start.Attr {
		switch a.Name.Local {
		case "srsName":
			if r.geomSRS == "" {
				r.geomSRS = strings.TrimSpace(a.Value)
			}
		case "srsDimension", "dimension":
			if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n > 0 && n < 100 {
				dim = n
			}
		}
	}
	return dim
}

// geometry reads the GML geometry element whose start was just returned.
// dim is the inherited srsDimension, 0 when none.
func (r *refReader) geometry(start xml.StartElement, dim int) (orb.Geometry, error) {
	dim = r.geomAttrs(start, dim)
	local := start.Name.Local
	switch local {
	case "Point":
		pts, err := r.positions(r.pts[:0], dim)
		r.pts = pts[:0]
		if err != nil {
			return nil, err
		}
		if len(pts) != 1 {
			return nil, fmt.Errorf("gml:Point with %d positions", len(pts))
		}
		return pts[0], nil
	case "LineString", "LinearRing":
		pts, err := r.positions(r.pts[:0], dim)
		r.pts = pts[:0]
		if err != nil {
			return nil, err
		}
		if len(pts) < 2 {
			return nil, fmt.Errorf("gml:%s with %d positions", local, len(pts))
		}
		return orb.LineString(clonePoints(pts)), nil
	case "Curve":
		return r.curve(dim)
	case "Ring":
		ring, err := r.ring(start, dim)
		if err != nil {
			return nil, err
		}
		return orb.LineString(ring), nil
	case "Polygon", "PolygonPatch", "Rectangle", "Triangle":
		return r.polygon(dim)
	case "Surface", "PolyhedralSurface", "TriangulatedSurface", "Tin":
		return r.surface(dim)
	case "MultiPoint", "MultiLineString", "MultiCurve", "CompositeCurve", "MultiSurface",
		"CompositeSurface", "MultiPolygon", "MultiGeometry":
		return r.multi(local, dim)
	case "Envelope", "Box":
		return r.envelope(dim)
	}
	if isCurveSegment(local) {
		return nil, errCurve(local)
	}
	return nil, fmt.Errorf("geometry gml:%s not supported", local)
}

// positions reads the coordinates of a Point, LineString, LinearRing or
// LineStringSegment whose start was just returned, appending them to dst.
func (r *refReader) positions(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if r.resolve(t.Name.Space) != nsGML {
			if err := r.skip(); err != nil {
				return dst, err
			}
			continue
		}
		switch t.Name.Local {
		case "pos":
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			p, err := parsePos(text)
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
		case "posList":
			d := dim
			count := -1
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "srsDimension", "dimension":
					if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n > 0 && n < 100 {
						d = n
					}
				case "count":
					if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n > 0 {
						count = n
					}
				}
			}
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			dst, err = parsePosList(dst, text, d, count)
			if err != nil {
				return dst, err
			}
		case "coordinates":
			cs, ts, dec := ",", " ", "."
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "cs":
					cs = a.Value
				case "ts":
					ts = a.Value
				case "decimal":
					dec = a.Value
				}
			}
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			dst, err = parseCoordinates(dst, text, cs, ts, dec)
			if err != nil {
				return dst, err
			}
		case "coord":
			p, err := r.coord()
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
		case "pointProperty", "pointRep":
			n := len(dst)
			dst, err = r.pointIn(dst, dim)
			if err != nil {
				return dst, err
			}
			if len(dst) != n+1 {
				return dst, fmt.Errorf("gml:%s without a gml:Point", t.Name.Local)
			}
		default:
			if err := r.skip(); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// pointIn reads a pointProperty whose start was just returned and appends
// the position of the gml:Point inside.
func (r *refReader) pointIn(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if t.Name.Local != "Point" || r.resolve(t.Name.Space) != nsGML {
			if err := r.skip(); err != nil {
				return dst, err
			}
			continue
		}
		dim := r.geomAttrs(t, dim)
		n := len(dst)
		dst, err = r.positions(dst, dim)
		if err != nil {
			return dst, err
		}
		if len(dst) != n+1 {
			return dst, fmt.Errorf("gml:Point with %d positions", len(dst)-n)
		}
	}
	return dst, nil
}

// coord reads a GML 2 gml:coord with gml:X and gml:Y children.
func (r *refReader) coord() (orb.Point, error) {
	depth := len(r.stack)
	var p orb.Point
	seen := 0
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return p, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		i := -1
		switch t.Name.Local {
		case "X":
			i = 0
		case "Y":
			i = 1
		}
		text, err := r.readText()
		if err != nil {
			return p, err
		}
		if i < 0 {
			continue
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(text)), 64)
		if err != nil {
			return p, fmt.Errorf("gml:coord: %q is not a number", text)
		}
		p[i] = f
		seen |= 1 << i
	}
	if seen != 3 {
		return p, errors.New("gml:coord without both X and Y")
	}
	return p, nil
}

// readText reads the character data of the element whose start was just
// returned, into r.text (valid until the next readText).
func (r *refReader) readText() ([]byte, error) {
	depth := len(r.stack)
	r.text = r.text[:0]
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.CharData:
			r.text = append(r.text, t...)
		case xml.StartElement:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	return r.text, nil
}

// curve reads a gml:Curve: its LineStringSegments joined into one
// LineString. Any other segment kind is a curve and refused.
func (r *refReader) curve(dim int) (orb.Geometry, error) {
	pts, err := r.segments(r.pts[:0], dim)
	r.pts = pts[:0]
	if err != nil {
		return nil, err
	}
	if len(pts) < 2 {
		return nil, fmt.Errorf("gml:Curve with %d positions", len(pts))
	}
	return orb.LineString(clonePoints(pts)), nil
}

// segments reads the content of a Curve whose start was just returned.
func (r *refReader) segments(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch {
		case t.Name.Local == "segments":
			// descend: its children are the segments
		case t.Name.Local == "LineStringSegment":
			d := r.geomAttrs(t, dim)
			n := len(dst)
			seg, err := r.positions(dst, d)
			if err != nil {
				return seg, err
			}
			dst = joinSegment(seg, n)
		case isCurveSegment(t.Name.Local):
			return dst, errCurve(t.Name.Local)
		default:
			if err := r.skip(); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// polygon reads a Polygon or a polygon-like patch whose start was just
// returned.
func (r *refReader) polygon(dim int) (orb.Polygon, error) {
	depth := len(r.stack)
	var poly orb.Polygon
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch t.Name.Local {
		case "exterior", "outerBoundaryIs", "interior", "innerBoundaryIs":
			outer := t.Name.Local == "exterior" || t.Name.Local == "outerBoundaryIs"
			if outer != (len(poly) == 0) {
				return nil, fmt.Errorf("gml:%s out of place in polygon", t.Name.Local)
			}
			ring, err := r.boundary(dim)
			if err != nil {
				return nil, err
			}
			poly = append(poly, ring)
		default:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	if len(poly) == 0 {
		return nil, errors.New("gml polygon without exterior ring")
	}
	return poly, nil
}

// boundary reads an exterior/interior whose start was just returned.
func (r *refReader) boundary(dim int) (orb.Ring, error) {
	depth := len(r.stack)
	var ring orb.Ring
	found := false
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if found {
			return nil, fmt.Errorf("polygon boundary with more than one ring")
		}
		switch t.Name.Local {
		case "LinearRing":
			d := r.geomAttrs(t, dim)
			pts, err := r.positions(r.pts[:0], d)
			r.pts = pts[:0]
			if err != nil {
				return nil, err
			}
			ring = orb.Ring(clonePoints(pts))
		case "Ring":
			ring, err = r.ring(t, dim)
			if err != nil {
				return nil, err
			}
		default:
			if isCurveSegment(t.Name.Local) {
				return nil, errCurve(t.Name.Local)
			}
			return nil, fmt.Errorf("polygon boundary gml:%s not supported", t.Name.Local)
		}
		found = true
	}
	if !found {
		return nil, errors.New("empty polygon boundary")
	}
	if len(ring) < 4 {
		return nil, fmt.Errorf("polygon ring with %d positions, want at least 4", len(ring))
	}
	return ring, nil
}

// ring reads a gml:Ring (straight curve members joined) whose start was
// just returned.
func (r *refReader) ring(start xml.StartElement, dim int) (orb.Ring, error) {
	dim = r.geomAttrs(start, dim)
	depth := len(r.stack)
	var pts []orb.Point
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok || t.Name.Local == "curveMember" {
			continue
		}
		var g orb.Geometry
		switch t.Name.Local {
		case "LineString", "Curve", "LinearRing":
			g, err = r.geometry(t, dim)
			if err != nil {
				return nil, err
			}
		default:
			if isCurveSegment(t.Name.Local) {
				return nil, errCurve(t.Name.Local)
			}
			return nil, fmt.Errorf("gml:Ring member gml:%s not supported", t.Name.Local)
		}
		n := len(pts)
		pts = append(pts, g.(orb.LineString)...)
		pts = joinSegment(pts, n)
	}
	return orb.Ring(pts), nil
}

// surface reads a Surface (or PolyhedralSurface, TriangulatedSurface) whose
// start was just returned: one patch gives a Polygon, more a MultiPolygon.
func (r *refReader) surface(dim int) (orb.Geometry, error) {
	depth := len(r.stack)
	var mp orb.MultiPolygon
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch t.Name.Local {
		case "patches", "polygonPatches", "trianglePatches":
		case "PolygonPatch", "Rectangle", "Triangle":
			p, err := r.polygon(r.geomAttrs(t, dim))
			if err != nil {
				return nil, err
			}
			mp = append(mp, p)
		default:
			if isCurveSegment(t.Name.Local) {
				return nil, errCurve(t.Name.Local)
			}
			return nil, fmt.Errorf("surface patch gml:%s not supported", t.Name.Local)
		}
	}
	switch len(mp) {
	case 0:
		return nil, errors.New("gml:Surface without patches")
	case 1:
		return mp[0], nil
	}
	return mp, nil
}

// multi reads an aggregate or composite whose start was just returned.
func (r *refReader) multi(local string, dim int) (orb.Geometry, error) {
	depth := len(r.stack)
	var parts []orb.Geometry
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if len(r.stack) == depth+1 {
			// A member element (pointMember, surfaceMembers ...) holds the
			// parts; anything else here (gml:name ...) is skipped.
			if !strings.HasSuffix(t.Name.Local, "Member") && !strings.HasSuffix(t.Name.Local, "Members") {
				if err := r.skip(); err != nil {
					return nil, err
				}
			}
			continue
		}
		if r.resolve(t.Name.Space) != nsGML || !isGeometry(t.Name.Local) {
			return nil, fmt.Errorf("gml:%s member gml:%s not supported", local, t.Name.Local)
		}
		g, err := r.geometry(t, dim)
		if err != nil {
			return nil, err
		}
		parts = append(parts, g)
	}
	return assemble(local, parts)
}

// envelope reads an Envelope (lowerCorner/upperCorner) or a GML 2 Box and
// returns it as a polygon.
func (r *refReader) envelope(dim int) (orb.Geometry, error) {
	pts, err := r.cornerPositions(r.pts[:0], dim)
	r.pts = pts[:0]
	if err != nil {
		return nil, err
	}
	if len(pts) != 2 {
		return nil, fmt.Errorf("envelope with %d corners", len(pts))
	}
	b := orb.Bound{Min: pts[0], Max: pts[0]}.Extend(pts[1])
	return b.ToPolygon(), nil
}

// cornerPositions is positions that also takes lowerCorner/upperCorner.
func (r *refReader) cornerPositions(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch t.Name.Local {
		case "lowerCorner", "upperCorner", "pos":
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			p, err := parsePos(text)
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
		case "coordinates":
			cs, ts, dec := attrValue(t.Attr, "cs"), attrValue(t.Attr, "ts"), attrValue(t.Attr, "decimal")
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			dst, err = parseCoordinates(dst, text, cmp.Or(cs, ","), cmp.Or(ts, " "), cmp.Or(dec, "."))
			if err != nil {
				return dst, err
			}
		default:
			if err := r.skip(); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}
