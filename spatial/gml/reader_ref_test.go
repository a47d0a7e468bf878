package gml

// The Reader as it was before its own tokenizer (scan.go): the same
// decoding on encoding/xml's RawToken. It is kept as the reference of the
// differential tests (diff_test.go): the two must agree on every input.
// Its parts are in reader_ref_*_test.go: tokens, feature, geometry,
// positions, polygon.

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/paulmach/orb"

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
