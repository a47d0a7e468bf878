// Package gml streams the features of a WFS GetFeature response in GML:
// WFS 2.0 (GML 3.2, wfs:member), WFS 1.1 (GML 3.1.1, gml:featureMember and
// gml:featureMembers) and WFS 1.0 (GML 2, gml:featureMember). It reads one
// feature at a time with its own streaming tokenizer (scan.go), which
// accepts and refuses exactly what encoding/xml's RawToken does but runs
// several times faster, and resolves namespace prefixes itself, so memory
// stays flat however large the response.
//
// # Features
//
// The feature ID is the gml:id attribute, else the GML 2 fid attribute.
// Every child element of a feature that is not GML metadata (gml:boundedBy,
// gml:name, gml:description ...) is a property keyed by its local name:
//
//   - a property holding a GML geometry is a geometry property. The first one
//     becomes Feature.Geometry; any later one is stored in Properties as WKT
//     text (already in x/y order), so that Properties stays JSON-friendly;
//   - a property with only text is a string, as written (not trimmed); an
//     empty element is "", and one with xsi:nil="true" is nil; an empty
//     element with only an xlink:href attribute is the href;
//   - a complex property (child elements that are not geometry) is
//     flattened into the trimmed texts of its descendants joined by one
//     space, and left out when that is empty;
//   - a property name that occurs more than once becomes a []any of its
//     values in document order.
//
// # Geometry
//
// Point, LineString, LinearRing, Polygon (GML 3 exterior/interior and GML 2
// outerBoundaryIs/innerBoundaryIs, rings as LinearRing or as Ring of
// straight curve members), Curve of LineStringSegments, Surface and
// PolygonPatch/Rectangle/Triangle patches, MultiPoint, MultiLineString,
// MultiCurve, CompositeCurve, MultiSurface, CompositeSurface, MultiPolygon,
// MultiGeometry, and Envelope/Box (as a polygon). Coordinates may be pos,
// posList, coordinates (GML 2, with its cs/ts/decimal attributes) or coord;
// a third dimension (srsDimension="3") is dropped. Curved segments (Arc,
// ArcString, Circle, CubicSpline ...) are refused: Next returns a
// *spatial.FeatureError naming the feature and the element, wrapping
// spatial.ErrCurve, and the next call continues with the next feature.
//
// Axis order follows spatial.LatLonOrder for the geometry's srsName (the
// first one declared on or in the geometry, else the feature's boundedBy,
// else the collection's boundedBy, else Options.DefaultSRS) and
// Options.WFSVersion: lat/lon input is swapped so that x is the longitude.
//
// # Errors
//
// An ows:ExceptionReport or ServiceExceptionReport body (or a WFS 2.0
// wfs:truncatedResponse) gives a *spatial.ExceptionReport; HTML, JSON, text
// or an XML document of another kind gives a *spatial.NotFeaturesError; a
// body that ends early (including an empty one) gives an error matching
// io.ErrUnexpectedEOF. These are final, as is malformed XML.
package gml

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

// Options tunes a Reader. The zero value reads any supported response
// assuming WFS 2.0 axis-order rules.
type Options struct {
	// WFSVersion is the version the response was requested with: "2.0.0",
	// "1.1.0" or "1.0.0". It picks the axis-order rules. Defaults to "2.0.0".
	WFSVersion string
	// DefaultSRS is the srsName assumed for geometries when neither they nor
	// an enclosing boundedBy declare one, e.g. the SRSNAME requested.
	// Defaults to none, which means coordinates are taken as x/y.
	DefaultSRS string
	// TypeName is the feature type requested, with or without prefix
	// ("app:roads" or "roads"). Optional: it lets a bare feature document
	// (WFS 2.0 GetFeatureById) without a gml:id be recognised.
	TypeName string
	// Limits bound one feature; zero fields take spatial.DefaultLimits. Passing one
	// ends the reader with a *spatial.TooLargeError.
	Limits spatial.Limits
}

// Reader decodes a GML GetFeature response one feature at a time. It
// implements spatial.Reader. A Reader is not safe for concurrent use.
type Reader struct {
	opts  Options
	reuse bool            // ReuseFeatures was called
	spare map[string]any  // the map handed out before, when reuse
	feat  spatial.Feature // the feature handed out, when reuse
	// ptArena and ringArena hold the current feature's coordinates and rings when reuse,
	// from the first element at every feature.
	ptArena   []orb.Point
	ringArena []orb.Ring
	cr        *sniff.CountingReader
	// meter, when the source charges what is read to a memory budget, is told where
	// each feature starts.
	meter spatial.FeatureMeter
	br    *bufio.Reader
	sc    *scanner

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
	pb      propBuf
	pts     []orb.Point
	typeLoc string
	root    xml.StartElement // kept for a single-feature document

	memoSRS           string
	memoSwap, memoSet bool

	lim       spatial.Limits
	featStart int64 // offset where the feature being read began, -1 outside features
	featID    string
	vertices  int // of the feature being read, so far
}

var _ spatial.Reader = (*Reader)(nil)

const (
	kOther      kind = iota
	kCollection      // children are members, boundedBy, ...
	kMember          // children are features (or a nested collection)
)

const (
	nsOther nsClass = iota
	nsGML
	nsWFS
	nsOWS
	nsXSI
	nsXLink
)

// NewReader returns a Reader of the GML response in r. It reads r only when
// Next is called, through its own buffer.
func NewReader(r io.Reader, opts Options) *Reader {
	cr := &sniff.CountingReader{R: r}
	br := bufio.NewReaderSize(cr, 64<<10)
	tl := opts.TypeName
	if i := strings.LastIndexByte(tl, ':'); i >= 0 {
		tl = tl[i+1:]
	}
	lim := opts.Limits.OrDefault()
	sc := newScanner(br, charsetReader)
	sc.maxText, sc.maxLimit, sc.limitMax, sc.maxTok = lim.StringBytes, "max_string_bytes", lim.StringBytes, lim.FeatureBytes
	meter, _ := r.(spatial.FeatureMeter)
	return &Reader{meter: meter, opts: opts, cr: cr, br: br, sc: sc, meta: spatial.UnknownMeta(), typeLoc: tl, lim: lim, featStart: -1}
}

// Meta returns what the collection element said: numberMatched,
// numberReturned (numberOfFeatures in WFS 1.1), next, and the declared
// srsName. It is complete once the first Next call has returned.
func (r *Reader) Meta() spatial.Meta { return r.meta }

// ReuseFeatures implements spatial.FeatureReuser.
func (r *Reader) ReuseFeatures() { r.reuse = true }

// Next returns the next feature, io.EOF after the last one, a
// *spatial.FeatureError for a refused feature (call Next again to go on),
// or a final error.
func (r *Reader) Next() (*spatial.Feature, error) {
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
			f, err := r.member(r.root)
			if r.err == nil {
				r.err = io.EOF // the document held the one feature
			}
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
		switch tok.kind {
		case tkStart:
			t := tok.start
			n := len(r.stack)
			cls := r.resolve(t.Name.Space)
			switch r.stack[n-2].kind {
			case kCollection:
				if err := r.collectionChild(t, cls); err != nil {
					return nil, err
				}
			case kMember:
				if isCollection(t.Name.Local, cls) {
					r.stack[n-1].kind = kCollection
					continue
				}
				return r.member(t)
			default:
				if err := r.skip(); err != nil {
					return nil, err
				}
			}
		case tkEnd:
			if len(r.stack) == 0 {
				r.err = io.EOF
				return nil, io.EOF
			}
		}
	}
}

// member reads the feature whose start was just returned and counts it. A
// final error is r.err; any other error refuses only this feature.
func (r *Reader) member(start xml.StartElement) (*spatial.Feature, error) {
	f, err := r.feature(start)
	r.index++
	if r.err != nil {
		return nil, r.err
	}
	return f, err
}

// collChild is what a child element of a feature collection is.
type collChild uint8

const (
	collOther     collChild = iota // skipped
	collMember                     // wfs:member, gml:featureMember or gml:featureMembers: holds features
	collBoundedBy                  // the collection's envelope, which may declare its srsName
	collTruncated                  // WFS 2.0 wfs:truncatedResponse: the server stopped early
)

// collectionChildKind decides what the child of a collection named local in a
// namespace of class cls is. The member and boundedBy elements are taken
// in either the GML or the WFS namespace: servers mix them up.
func collectionChildKind(local string, cls nsClass) collChild {
	gmlOrWFS := cls == nsWFS || cls == nsGML
	switch {
	case gmlOrWFS && (local == "member" || local == "featureMember" || local == "featureMembers"):
		return collMember
	case gmlOrWFS && local == "boundedBy":
		return collBoundedBy
	case cls == nsWFS && local == "truncatedResponse":
		return collTruncated
	}
	return collOther
}

// collectionChild reads the child t of a collection whose start was just
// returned, as far as it is not a member: a member's features are read by
// the following calls.
func (r *Reader) collectionChild(t xml.StartElement, cls nsClass) error {
	switch collectionChildKind(t.Name.Local, cls) {
	case collMember:
		r.stack[len(r.stack)-1].kind = kMember
	case collBoundedBy:
		srs, err := r.envelopeSRS()
		if err != nil {
			return err
		}
		if r.collSRS == "" {
			r.collSRS = srs
			if r.meta.SRSName == "" {
				r.meta.SRSName = srs
			}
		}
	case collTruncated:
		return r.truncatedResponse()
	default:
		return r.skip()
	}
	return nil
}

func isCollection(local string, cls nsClass) bool {
	switch local {
	case "FeatureCollection", "SimpleFeatureCollection", "Tuple":
		return cls == nsWFS || cls == nsGML
	}
	return false
}

// begin reads up to the root element and decides what the body is.
func (r *Reader) begin() error {
	peek, perr := r.br.Peek(512)
	// The scanner reads on through br, which may reuse the memory of peek
	// before the snippet of an error is taken from it.
	peek = bytes.Clone(peek)
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
		if tok.kind != tkStart {
			continue
		}
		start := tok.start
		cls := r.resolve(start.Name.Space)
		local := start.Name.Local
		switch {
		case spatial.IsExceptionReportElement(local):
			rep, err := r.exceptionReport(start)
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
			r.root.Attr = slices.Clone(start.Attr)
			return nil
		}
		return &spatial.NotFeaturesError{Kind: "xml", Snippet: spatial.Snippet(peek, 200)}
	}
}

func (r *Reader) hasGMLID(attrs []xml.Attr) bool {
	for _, a := range attrs {
		if a.Name.Local == "id" && a.Name.Space != "" && r.resolve(a.Name.Space) == nsGML {
			return true
		}
	}
	return false
}

// truncatedResponse reads a WFS 2.0 wfs:truncatedResponse, in which the
// server says it stopped the response early, and returns its exception.
func (r *Reader) truncatedResponse() error {
	depth := len(r.stack) - 1
	for len(r.stack) > depth {
		tok, err := r.token()
		if err != nil {
			return err
		}
		if t := tok.start; tok.kind == tkStart && spatial.IsExceptionReportElement(t.Name.Local) {
			r.stack = r.stack[:len(r.stack)-1] // DecodeExceptionReport consumes it
			r.ns = r.ns[:len(r.ns)-nsCount(t.Attr)]
			rep, err := r.exceptionReport(t)
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
func (r *Reader) envelopeSRS() (string, error) {
	depth := len(r.stack) - 1
	srs := ""
	for len(r.stack) > depth {
		tok, err := r.token()
		if err != nil {
			return "", err
		}
		if t := tok.start; tok.kind == tkStart && srs == "" {
			srs = attrValue(t.Attr, "srsName")
		}
	}
	return srs, nil
}

// exceptionReport is spatial.DecodeExceptionReport on the Reader's own
// tokenizer: it reads the rest of an exception report whose start element
// was just read, matching elements by local name whatever their namespace.
// When reading fails, the report read so far is returned with the error; a
// cut-off body gives a *spatial.TruncatedError.
func (r *Reader) exceptionReport(start xml.StartElement) (*spatial.ExceptionReport, error) {
	rep := &spatial.ExceptionReport{Version: attrValue(start.Attr, "version")}
	var texts []string
	var text strings.Builder
	inText := false // inside ExceptionText or ServiceException
	first := true
	depth := 1
	for depth > 0 {
		tok, err := r.sc.next()
		if err != nil {
			if err == io.EOF || sniff.XMLTruncated(err) {
				err = &spatial.TruncatedError{Offset: r.sc.offset(), Err: err}
			}
			rep.Text = strings.Join(texts, "; ")
			return rep, err
		}
		switch tok.kind {
		case tkStart:
			depth++
			t := tok.start
			switch t.Name.Local {
			case "Exception", "ServiceException":
				if first {
					rep.Code = attrValue(t.Attr, "exceptionCode")
					if rep.Code == "" {
						rep.Code = attrValue(t.Attr, "code")
					}
					rep.Locator = attrValue(t.Attr, "locator")
					first = false
				}
				if t.Name.Local == "ServiceException" {
					inText = true
					text.Reset()
				}
			case "ExceptionText":
				inText = true
				text.Reset()
			}
		case tkEnd:
			depth--
			switch tok.end.Local {
			case "ExceptionText", "ServiceException":
				if s := strings.TrimSpace(text.String()); s != "" {
					texts = append(texts, s)
				}
				inText = false
			}
		case tkText:
			if inText {
				text.Write(tok.text)
			}
		}
	}
	rep.Text = strings.Join(texts, "; ")
	return rep, nil
}
