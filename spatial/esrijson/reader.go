// Package esrijson reads the Esri JSON feature sets an ArcGIS REST feature service answers
// a query with (f=json), one feature at a time, as spatial.Features: attributes as
// properties (numbers as json.Number, so 64-bit integers stay exact), geometry converted
// to orb. Polygons are one flat list of rings in Esri JSON, exteriors clockwise and holes
// counter-clockwise; they are grouped into polygons by orientation and containment and
// written as GeoJSON winds them (exteriors counter-clockwise). Z and M values are dropped:
// geoflow stores two-dimensional geometry. An {"error":{...}} body, which ArcGIS answers with
// HTTP 200, is returned as a *ServiceError.
package esrijson

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
)

// Options configures a Reader.
type Options struct {
	// IDField is the attribute that identifies a feature (the layer's objectIdField).
	// Defaults to the response's objectIdFieldName.
	IDField string
	// Limits bound one feature; zero fields take spatial.DefaultLimits.
	Limits spatial.Limits
}

// ServiceError is the error object of an ArcGIS answer:
// {"error":{"code":498,"message":"Invalid token.","details":[]}}.
type ServiceError struct {
	Code    int
	Message string
	Details []string
}

func (e *ServiceError) Error() string {
	s := fmt.Sprintf("esrijson: service error %d: %s", e.Code, e.Message)
	if len(e.Details) > 0 {
		s += " (" + strings.Join(e.Details, "; ") + ")"
	}
	return s
}

// ServiceErrorOf makes a ServiceError of the decoded value of an answer's "error" member.
// It reads leniently (a code written as a string, a message as null, numbers decoded as
// json.Number or float64): an error answer must be an error whatever its members hold.
func ServiceErrorOf(v any) *ServiceError {
	se := &ServiceError{Message: "(no message)"}
	m, ok := v.(map[string]any)
	if !ok {
		return se
	}
	if msg, ok := m["message"].(string); ok {
		se.Message = msg
	}
	switch c := m["code"].(type) {
	case json.Number:
		se.Code, _ = strconv.Atoi(c.String())
	case float64:
		se.Code = int(c)
	case string:
		se.Code, _ = strconv.Atoi(strings.TrimSpace(c))
	}
	if d, ok := m["details"].([]any); ok {
		for _, x := range d {
			se.Details = append(se.Details, fmt.Sprint(x))
		}
	}
	return se
}

// Reader decodes a feature set. It is not safe for concurrent use.
type Reader struct {
	opts     Options
	cr       *countingReader
	dec      *json.Decoder
	started  bool
	inFeats  bool
	done     bool
	err      error
	index    int
	idField  string
	exceeded bool
	got      bool // a features member was seen
	// meter, when the source charges what is read to a memory budget, is told where
	// each feature starts.
	meter spatial.FeatureMeter
}

// NewReader returns a Reader of the feature set in r.
func NewReader(r io.Reader, opts Options) *Reader {
	opts.Limits = opts.Limits.OrDefault()
	cr := &countingReader{r: bufio.NewReaderSize(r, 64<<10), limit: -1}
	dec := json.NewDecoder(cr)
	dec.UseNumber()
	meter, _ := r.(spatial.FeatureMeter)
	return &Reader{opts: opts, cr: cr, dec: dec, idField: opts.IDField, meter: meter}
}

// Meta returns what the feature set said: ArcGIS gives no counts, so NumberMatched and
// NumberReturned are unknown.
func (r *Reader) Meta() spatial.Meta { return spatial.UnknownMeta() }

// Exceeded tells whether the answer said exceededTransferLimit: it holds fewer features
// than the query matched. Known once Next has returned io.EOF.
func (r *Reader) Exceeded() bool { return r.exceeded }

// ObjectIDField is the response's objectIdFieldName, or the configured IDField.
func (r *Reader) ObjectIDField() string { return r.idField }

// feature is one element of "features".
type feature struct {
	Attributes map[string]any  `json:"attributes"`
	Geometry   json.RawMessage `json:"geometry"`
}

// Next returns the next feature, io.EOF after the last. A *spatial.FeatureError refuses one
// feature (a curve, malformed coordinates); Next may be called again after it. Other
// errors are final: a *ServiceError, a *spatial.TooLargeError, a *spatial.TruncatedError,
// a *spatial.NotFeaturesError.
func (r *Reader) Next() (*spatial.Feature, error) {
	if r.err != nil {
		return nil, r.err
	}
	f, err := r.next()
	if err != nil {
		var fe *spatial.FeatureError
		if !errors.As(err, &fe) {
			r.err = err
		}
	}
	return f, err
}

func (r *Reader) next() (*spatial.Feature, error) {
	if !r.started {
		if err := r.begin(); err != nil {
			return nil, err
		}
	}
	for {
		if r.inFeats {
			if r.dec.More() {
				return r.feature()
			}
			if _, err := r.dec.Token(); err != nil { // ]
				return nil, r.wrap(err)
			}
			r.inFeats = false
			continue
		}
		tok, err := r.dec.Token()
		if err != nil {
			return nil, r.wrap(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			if !r.got {
				return nil, &spatial.NotFeaturesError{Kind: "json", Snippet: "an object without features"}
			}
			r.done = true
			return nil, io.EOF
		}
		key, _ := tok.(string)
		if err := r.member(key); err != nil {
			return nil, err
		}
	}
}

// begin reads the opening brace of the feature set.
func (r *Reader) begin() error {
	r.started = true
	tok, err := r.dec.Token()
	if err != nil {
		return r.wrap(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &spatial.NotFeaturesError{Kind: "json", Snippet: fmt.Sprintf("%v", tok)}
	}
	return nil
}

// feature decodes the next element of "features", within the feature byte limit.
func (r *Reader) feature() (*spatial.Feature, error) {
	start := r.dec.InputOffset()
	if r.meter != nil {
		r.meter.StartFeature(r.opts.Limits)
	}
	r.cr.limit = r.cr.n + r.opts.Limits.FeatureBytes
	var f feature
	err := r.dec.Decode(&f)
	r.cr.limit = -1
	if err != nil {
		return nil, r.wrapFeature(err, start)
	}
	i := r.index
	r.index++
	return r.convert(&f, i)
}

// member reads the value of the top-level member key: "features" opens the array of
// features, "error" is the service's error, and objectIdFieldName and
// exceededTransferLimit are kept; other members are skipped.
func (r *Reader) member(key string) error {
	switch key {
	case "error":
		var e any
		if err := r.decodeValue(&e); err != nil {
			return err
		}
		return ServiceErrorOf(e)
	case "features":
		tok, err := r.dec.Token()
		if err != nil {
			return r.wrap(err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return &spatial.NotFeaturesError{Kind: "json", Snippet: "features is not an array"}
		}
		r.got, r.inFeats = true, true
	case "objectIdFieldName":
		var s string
		if err := r.decodeValue(&s); err != nil {
			return err
		}
		if r.idField == "" {
			r.idField = s
		}
	case "exceededTransferLimit":
		var b bool
		if err := r.decodeValue(&b); err != nil {
			return err
		}
		r.exceeded = b
	default:
		var skip json.RawMessage
		return r.decodeValue(&skip)
	}
	return nil
}

// decodeValue decodes the next member's value into v, within the feature byte limit.
func (r *Reader) decodeValue(v any) error {
	start := r.dec.InputOffset()
	r.cr.limit = r.cr.n + r.opts.Limits.FeatureBytes
	err := r.dec.Decode(v)
	r.cr.limit = -1
	if err != nil {
		return r.wrapFeature(err, start)
	}
	return nil
}

func (r *Reader) wrap(err error) error {
	switch {
	case errors.Is(err, errLimit):
		return &spatial.TooLargeError{Limit: "max_feature_bytes", Max: r.opts.Limits.FeatureBytes, Offset: r.dec.InputOffset(), Index: -1}
	case err == io.EOF && !r.started:
		return &spatial.NotFeaturesError{Kind: "empty"}
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return &spatial.TruncatedError{Offset: r.dec.InputOffset(), Err: err}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &spatial.NotFeaturesError{Kind: "json", Snippet: err.Error()}
	}
	return err
}

func (r *Reader) wrapFeature(err error, start int64) error {
	if errors.Is(err, errLimit) {
		return &spatial.TooLargeError{Limit: "max_feature_bytes", Max: r.opts.Limits.FeatureBytes, Offset: start, Index: r.index}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &spatial.NotFeaturesError{Kind: "json", Snippet: err.Error()}
	}
	return r.wrap(err)
}

// convert makes a feature of f.
func (r *Reader) convert(f *feature, index int) (*spatial.Feature, error) {
	props := f.Attributes
	if props == nil {
		props = map[string]any{}
	}
	id := ""
	if r.idField != "" {
		if v, ok := props[r.idField]; ok && v != nil {
			id = fmt.Sprint(v)
		}
	}
	for k, v := range props {
		if s, ok := v.(string); ok && int64(len(s)) > r.opts.Limits.StringBytes {
			r.err = &spatial.TooLargeError{Limit: "max_string_bytes", Max: r.opts.Limits.StringBytes, Offset: r.dec.InputOffset(), ID: id, Index: index}
			_ = k
			return nil, r.err
		}
	}
	g, err := Geometry(f.Geometry, r.opts.Limits.Vertices)
	if err != nil {
		var tl *spatial.TooLargeError
		if errors.As(err, &tl) {
			tl.ID, tl.Index, tl.Offset = id, index, r.dec.InputOffset()
			r.err = tl
			return nil, tl
		}
		return nil, &spatial.FeatureError{ID: id, Index: index, Err: err}
	}
	return &spatial.Feature{ID: id, Geometry: g, Properties: props}, nil
}

// errLimit is what countingReader returns past its limit.
var errLimit = errors.New("esrijson: feature byte limit")

// countingReader counts the bytes read and refuses to read past limit (when not -1): a
// feature with an unterminated string would otherwise be buffered whole.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.limit >= 0 {
		left := c.limit - c.n
		if left <= 0 {
			return 0, errLimit
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
