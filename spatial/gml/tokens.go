// The Reader's layer over the scanner: namespace classes and bindings, the
// element stack, end-tag matching, error classification, skipping, and
// attribute helpers.

package gml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

type kind uint8

type frame struct {
	prefix, local string
	nns           int // namespace bindings declared on this element
	kind          kind
}

type nsClass uint8

type binding struct {
	prefix string
	class  nsClass
}

func classify(uri string) nsClass {
	switch uri {
	case "http://www.opengis.net/gml", "http://www.opengis.net/gml/3.2":
		return nsGML
	case "http://www.opengis.net/wfs", "http://www.opengis.net/wfs/2.0":
		return nsWFS
	case "http://www.opengis.net/ows", "http://www.opengis.net/ows/1.1", "http://www.opengis.net/ows/2.0", "http://www.opengis.net/ogc":
		return nsOWS
	case "http://www.w3.org/2001/XMLSchema-instance":
		return nsXSI
	case "http://www.w3.org/1999/xlink":
		return nsXLink
	}
	return nsOther
}

// resolve returns the namespace class bound to prefix. An undeclared prefix
// that is conventionally gml, wfs, ows or xsi is taken as such: sloppy
// servers exist.
func (r *Reader) resolve(prefix string) nsClass {
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

// token returns the next start, end or text token (valid until the next
// call), keeping the element and namespace stacks, and checking that end
// tags match. Errors are final: they are stored in r.err, classified.
func (r *Reader) token() (*token, error) {
	for {
		tok, err := r.sc.next()
		if err != nil {
			return nil, r.fail(err)
		}
		if err := r.checkToken(tok); err != nil {
			return nil, err
		}
		switch tok.kind {
		case tkStart:
			nns := 0
			for _, a := range tok.start.Attr {
				if a.Name.Space == "xmlns" {
					r.ns = append(r.ns, binding{prefix: a.Name.Local, class: classify(a.Value)})
					nns++
				} else if a.Name.Space == "" && a.Name.Local == "xmlns" {
					r.ns = append(r.ns, binding{prefix: "", class: classify(a.Value)})
					nns++
				}
			}
			r.stack = append(r.stack, frame{prefix: tok.start.Name.Space, local: tok.start.Name.Local, nns: nns})
			if len(r.stack) > r.lim.Depth {
				return nil, r.tooLarge("max_depth", int64(r.lim.Depth))
			}
			if err := r.checkFeatureBytes(); err != nil {
				return nil, err
			}
			return tok, nil
		case tkEnd:
			n := len(r.stack)
			name := tok.end
			if n == 0 {
				return nil, r.fail(&xml.SyntaxError{Msg: "unexpected end element </" + name.Local + ">", Line: 0})
			}
			top := r.stack[n-1]
			if top.prefix != name.Space || top.local != name.Local {
				return nil, r.fail(&xml.SyntaxError{Msg: fmt.Sprintf("element <%s> closed by </%s>", qname(top.prefix, top.local), qname(name.Space, name.Local))})
			}
			r.ns = r.ns[:len(r.ns)-top.nns]
			r.stack = r.stack[:n-1]
			return tok, nil
		case tkText:
			if err := r.checkFeatureBytes(); err != nil {
				return nil, err
			}
			return tok, nil
		}
	}
}

// checkToken holds a complete token to the limits: its text, or each of its attribute
// values, to Limits.StringBytes (coordinate text to what the feature has left). The
// scanner stops tokens that grow past them before they end.
func (r *Reader) checkToken(tok *token) error {
	sc := r.sc
	switch tok.kind {
	case tkText:
		if int64(len(tok.text)) > sc.maxText {
			return r.fail(&spatial.TooLargeError{Limit: sc.maxLimit, Max: sc.limitMax, Offset: sc.tokStart, Index: -1})
		}
	case tkStart:
		for _, a := range tok.start.Attr {
			if int64(len(a.Value)) > r.lim.StringBytes {
				return r.tooLarge("max_string_bytes", r.lim.StringBytes)
			}
		}
	}
	return nil
}

// checkFeatureBytes fails the reader once the feature being read has passed
// Limits.FeatureBytes.
func (r *Reader) checkFeatureBytes() error {
	if r.featStart >= 0 && r.sc.offset()-r.featStart > r.lim.FeatureBytes {
		return r.fail(&spatial.TooLargeError{Limit: "max_feature_bytes", Max: r.lim.FeatureBytes, Offset: r.sc.offset(), Index: -1})
	}
	return nil
}

// tooLarge fails the reader with limit passed at the current token.
func (r *Reader) tooLarge(limit string, max int64) error {
	return r.fail(&spatial.TooLargeError{Limit: limit, Max: max, Offset: r.sc.tokStart, Index: -1})
}

func qname(prefix, local string) string {
	if prefix == "" {
		return local
	}
	return prefix + ":" + local
}

// fail classifies a decoding error, stores it as final and returns it.
func (r *Reader) fail(err error) error {
	if r.err != nil {
		return r.err
	}
	var tl *spatial.TooLargeError
	switch {
	case errors.As(err, &tl):
		if r.featStart >= 0 && tl.Index < 0 {
			tl.ID, tl.Index = r.featID, r.index
		}
		err = tl
	case err == io.EOF:
		// The scanner, like RawToken, reports a clean io.EOF even inside
		// open elements; every caller of token expects more, so this is a
		// cut-off body.
		err = &spatial.TruncatedError{Offset: r.sc.offset(), Err: io.ErrUnexpectedEOF}
	case sniff.XMLTruncated(err):
		err = &spatial.TruncatedError{Offset: r.sc.offset(), Err: err}
	default:
		var se *xml.SyntaxError
		if asSyntax(err, &se) {
			err = fmt.Errorf("gml: malformed XML near byte %d: %w", r.sc.offset(), err)
		} else {
			err = fmt.Errorf("gml: reading response: %w", err)
		}
	}
	r.err = err
	return err
}

func asSyntax(err error, target **xml.SyntaxError) bool {
	se, ok := err.(*xml.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

// skip consumes the rest of the element whose start was just returned.
func (r *Reader) skip() error {
	return r.skipTo(len(r.stack) - 1)
}

// skipTo consumes tokens until the element stack is depth deep.
func (r *Reader) skipTo(depth int) error {
	for len(r.stack) > depth {
		if _, err := r.token(); err != nil {
			return err
		}
	}
	return nil
}

func nsCount(attrs []xml.Attr) int {
	n := 0
	for _, a := range attrs {
		if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
			n++
		}
	}
	return n
}

func attrValue(attrs []xml.Attr, local string) string {
	for _, a := range attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// countAttr parses a count attribute; absent, "unknown" or malformed is -1.
func countAttr(attrs []xml.Attr, local string) int64 {
	v := attrValue(attrs, local)
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
