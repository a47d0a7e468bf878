// This file keeps the encoding/json based reader that the streaming Reader
// replaced, as the reference of the differential fuzz test.
// The top-level members and the geometries are in reader_ref_members_test.go
// and reader_ref_geometry_test.go.

package geojson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

// refReader decodes a GeoJSON response one feature at a time. It implements
// spatial.Reader. A refReader is not safe for concurrent use.
type refReader struct {
	opts Options
	br   *bufio.Reader
	dec  *json.Decoder
	peek []byte

	started     bool
	inFeatures  bool
	sawFeatures bool
	err         error
	index       int
	meta        spatial.Meta
	total       int64 // totalFeatures, -1 unknown

	typ     string
	exc     *spatial.ExceptionReport
	code    string // OGC API exception "code"
	descr   string // OGC API exception "description"
	single  rawFeature
	singleN int // members of a top-level Feature seen
}

var _ spatial.Reader = (*refReader)(nil)

// newRefReader returns a refReader of the GeoJSON response in r. It reads r only
// when Next is called, through its own buffer.
func newRefReader(r io.Reader, opts Options) *refReader {
	br := bufio.NewReaderSize(r, 64<<10)
	return &refReader{opts: opts, br: br, meta: spatial.UnknownMeta(), total: -1}
}

// Meta returns what the collection's members said. Members after
// "features" are known only once Next has returned io.EOF.
func (r *refReader) Meta() spatial.Meta { return r.meta }

type rawFeature struct {
	Type       string          `json:"type"`
	ID         json.RawMessage `json:"id"`
	Geometry   json.RawMessage `json:"geometry"`
	Properties map[string]any  `json:"properties"`
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
			return nil, r.setErr(err)
		}
		if err := r.members(); err != nil {
			return nil, r.setErr(err)
		}
	}
	if r.inFeatures {
		if !r.dec.More() {
			if _, err := r.dec.Token(); err != nil { // ']'
				return nil, r.setErr(r.jsonErr(err))
			}
			r.inFeatures = false
			if err := r.members(); err != nil {
				return nil, r.setErr(err)
			}
			return r.finish() // members() returned at the end of the top-level object
		}
		var raw rawFeature
		err := r.dec.Decode(&raw)
		if err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return nil, r.setErr(r.jsonErr(err))
			}
		}
		return r.feature(&raw, err)
	}
	// members() returned at the end of the top-level object.
	return r.finish()
}

func (r *refReader) setErr(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// feature converts one decoded feature; decodeErr is a type error from
// decoding it, which refuses it.
func (r *refReader) feature(raw *rawFeature, decodeErr error) (*spatial.Feature, error) {
	idx := r.index
	r.index++
	id := refFeatureID(raw.ID)
	if decodeErr != nil {
		return nil, &spatial.FeatureError{ID: id, Index: idx, Err: fmt.Errorf("geojson: %w", decodeErr)}
	}
	g, err := refParseGeometry(raw.Geometry)
	if err != nil {
		return nil, &spatial.FeatureError{ID: id, Index: idx, Err: err}
	}
	if r.opts.SwapXY {
		g = spatial.SwapXY(g)
	}
	props := raw.Properties
	if props == nil {
		props = map[string]any{}
	}
	return &spatial.Feature{ID: id, Geometry: g, Properties: props}, nil
}

func refFeatureID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// begin classifies the body from its first bytes and reads the opening
// brace of the top-level object.
func (r *refReader) begin() error {
	peek, perr := r.br.Peek(512)
	r.peek = peek
	switch k := sniff.Kind(peek); k {
	case "empty":
		if perr != nil && perr != io.EOF {
			return fmt.Errorf("geojson: reading response: %w", perr)
		}
		return &spatial.TruncatedError{Offset: int64(len(peek)), Err: io.ErrUnexpectedEOF}
	case "xml":
		return r.xmlBody()
	case "json":
		if sniff.SkipBOMSpace(peek)[0] != '{' {
			return r.notFeatures()
		}
	default:
		return &spatial.NotFeaturesError{Kind: k, Snippet: spatial.Snippet(peek, 200)}
	}
	body := io.Reader(r.br)
	if bytes.HasPrefix(peek, []byte("\xef\xbb\xbf")) {
		r.br.Discard(3)
	}
	r.dec = json.NewDecoder(body)
	if _, err := r.dec.Token(); err != nil { // '{'
		return r.jsonErr(err)
	}
	return nil
}

func (r *refReader) notFeatures() error {
	return &spatial.NotFeaturesError{Kind: "json", Snippet: spatial.Snippet(r.peek, 200)}
}

// xmlBody reads an XML body: an OGC exception report, or something else.
func (r *refReader) xmlBody() error {
	d := xml.NewDecoder(r.br)
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		return in, nil // only the report's ASCII structure matters here
	}
	for {
		tok, err := d.RawToken()
		if err != nil {
			if err == io.EOF || sniff.XMLTruncated(err) {
				return &spatial.TruncatedError{Offset: d.InputOffset(), Err: io.ErrUnexpectedEOF}
			}
			return &spatial.NotFeaturesError{Kind: "xml", Snippet: spatial.Snippet(r.peek, 200)}
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch {
		case spatial.IsExceptionReportElement(start.Name.Local):
			rep, err := spatial.DecodeExceptionReport(d, start)
			if err != nil {
				return err
			}
			return rep
		case strings.EqualFold(start.Name.Local, "html"):
			return &spatial.NotFeaturesError{Kind: "html", Snippet: spatial.Snippet(r.peek, 200)}
		}
		return &spatial.NotFeaturesError{Kind: "xml", Snippet: spatial.Snippet(r.peek, 200)}
	}
}

// jsonErr classifies an error of the JSON decoder. Every read happens inside
// the top-level object, so running out of input is a cut-off body.
func (r *refReader) jsonErr(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &spatial.TruncatedError{Offset: r.dec.InputOffset(), Err: io.ErrUnexpectedEOF}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("geojson: malformed JSON near byte %d: %w", se.Offset, err)
	}
	return fmt.Errorf("geojson: reading response: %w", err)
}

// finish ends the reading once the top-level object has closed.
func (r *refReader) finish() (*spatial.Feature, error) {
	if r.meta.NumberMatched < 0 && r.total >= 0 {
		r.meta.NumberMatched = r.total
	}
	switch {
	case r.exc != nil:
		return nil, r.setErr(r.exc)
	case !r.sawFeatures && r.code != "" && r.descr != "":
		return nil, r.setErr(&spatial.ExceptionReport{Code: r.code, Text: r.descr})
	case r.typ == "Feature" && r.singleN > 0:
		r.err = io.EOF
		return r.feature(&r.single, nil)
	case !r.sawFeatures:
		return nil, r.setErr(r.notFeatures())
	}
	r.err = io.EOF
	return nil, io.EOF
}
