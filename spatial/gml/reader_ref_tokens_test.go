package gml

// The reference reader's token stream over encoding/xml's RawToken: element
// and namespace stacks, error classification, skipping (see reader_ref_test.go).

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

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
