// This file keeps the encoding/json based reader that the streaming Reader
// replaced, as the reference of the differential fuzz test.

package geojson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

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
	errText string // {"error": ...}
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
	for r.inFeatures {
		if !r.dec.More() {
			if _, err := r.dec.Token(); err != nil { // ']'
				return nil, r.setErr(r.jsonErr(err))
			}
			r.inFeatures = false
			if err := r.members(); err != nil {
				return nil, r.setErr(err)
			}
			break
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

// members reads top-level members until the "features" array opens (then
// inFeatures is set) or the top-level object ends.
func (r *refReader) members() error {
	for {
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonErr(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("geojson: unexpected %v in the top-level object", tok)
		}
		if err := r.member(key); err != nil {
			return err
		}
		if r.inFeatures {
			return nil
		}
	}
}

func (r *refReader) member(key string) error {
	switch key {
	case "features":
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonErr(err)
		}
		switch tok {
		case json.Delim('['):
			r.inFeatures, r.sawFeatures = true, true
			return nil
		case nil:
			r.sawFeatures = true
			return nil
		}
		if d, ok := tok.(json.Delim); ok {
			// An object: not a collection; consume it to stay in step.
			if err := r.skipRest(d); err != nil {
				return err
			}
		}
		return r.notFeatures()
	case "numberMatched", "numberReturned", "totalFeatures":
		var v any
		if err := r.dec.Decode(&v); err != nil {
			return r.decodeErr(err)
		}
		n := refCount(v)
		switch key {
		case "numberMatched":
			r.meta.NumberMatched = n
		case "numberReturned":
			r.meta.NumberReturned = n
		default:
			r.total = n
		}
	case "links":
		var links []struct {
			Href string `json:"href"`
			Rel  string `json:"rel"`
		}
		if err := r.dec.Decode(&links); err != nil {
			return r.decodeErr(err)
		}
		for _, l := range links {
			if l.Rel == "next" && r.meta.Next == "" {
				r.meta.Next = l.Href
			}
		}
	case "crs":
		var crs struct {
			Properties struct {
				Name string `json:"name"`
			} `json:"properties"`
		}
		if err := r.dec.Decode(&crs); err != nil {
			return r.decodeErr(err)
		}
		r.meta.SRSName = crs.Properties.Name
	case "type":
		var s any
		if err := r.dec.Decode(&s); err != nil {
			return r.decodeErr(err)
		}
		r.typ, _ = s.(string)
	case "exceptions":
		var exs []struct {
			Code    string `json:"code"`
			Locator string `json:"locator"`
			Text    string `json:"text"`
		}
		if err := r.dec.Decode(&exs); err != nil {
			return r.decodeErr(err)
		}
		rep := &spatial.ExceptionReport{}
		var texts []string
		for i, e := range exs {
			if i == 0 {
				rep.Code, rep.Locator = e.Code, e.Locator
			}
			if t := strings.TrimSpace(e.Text); t != "" {
				texts = append(texts, t)
			}
		}
		rep.Text = strings.Join(texts, "; ")
		r.exc = rep
	case "error":
		var v any
		if err := r.dec.Decode(&v); err != nil {
			return r.decodeErr(err)
		}
		r.errorMember(v)
	case "code", "description":
		var v any
		if err := r.dec.Decode(&v); err != nil {
			return r.decodeErr(err)
		}
		if key == "code" {
			r.code = refScalarText(v)
		} else {
			r.descr = refScalarText(v)
		}
	case "id", "geometry", "properties":
		// Members of a top-level Feature (GetFeatureById); decoded into
		// the same shape a collection member has.
		var err error
		switch key {
		case "id":
			err = r.dec.Decode(&r.single.ID)
		case "geometry":
			err = r.dec.Decode(&r.single.Geometry)
		default:
			err = r.dec.Decode(&r.single.Properties)
		}
		if err != nil {
			return r.decodeErr(err)
		}
		r.singleN++
	default:
		var skip json.RawMessage
		if err := r.dec.Decode(&skip); err != nil {
			return r.decodeErr(err)
		}
	}
	return nil
}

// decodeErr classifies an error from Decode of a top-level member: a type
// mismatch means the body is not the collection it claims to be.
func (r *refReader) decodeErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return r.notFeatures()
	}
	return r.jsonErr(err)
}

// skipRest consumes tokens to the end of the container opened by d.
func (r *refReader) skipRest(d json.Delim) error {
	depth := 1
	for depth > 0 {
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonErr(err)
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

func (r *refReader) errorMember(v any) {
	rep := &spatial.ExceptionReport{}
	switch e := v.(type) {
	case map[string]any:
		rep.Code = refScalarText(e["code"])
		rep.Text = refScalarText(e["message"])
		if d, ok := e["details"].([]any); ok {
			for _, x := range d {
				if s := strings.TrimSpace(refScalarText(x)); s != "" {
					rep.Text = strings.TrimPrefix(rep.Text+"; "+s, "; ")
				}
			}
		}
	default:
		rep.Text = refScalarText(v)
	}
	r.exc = rep
}

func refScalarText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// count reads a count member: a non-negative number, else -1 ("unknown").
func refCount(v any) int64 {
	f, ok := v.(float64)
	if !ok || f < 0 || f > 1<<53 {
		return -1
	}
	return int64(f)
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

type rawGeometry struct {
	Type        string            `json:"type"`
	Coordinates json.RawMessage   `json:"coordinates"`
	Geometries  []json.RawMessage `json:"geometries"`
}

// refMaxCollectionDepth bounds nested GeometryCollections.
const refMaxCollectionDepth = 8

// refParseGeometry decodes a GeoJSON geometry object; null or absent is a nil
// geometry.
func refParseGeometry(raw json.RawMessage) (orb.Geometry, error) {
	return refParseGeometryDepth(raw, 0)
}

func refParseGeometryDepth(raw json.RawMessage, depth int) (orb.Geometry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var g rawGeometry
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("geojson geometry: %w", err)
	}
	if g.Type == "GeometryCollection" {
		if depth >= refMaxCollectionDepth {
			return nil, errors.New("geojson geometry: GeometryCollection nested too deep")
		}
		c := make(orb.Collection, 0, len(g.Geometries))
		for _, m := range g.Geometries {
			part, err := refParseGeometryDepth(m, depth+1)
			if err != nil {
				return nil, err
			}
			if part == nil {
				return nil, errors.New("geojson geometry: null member of a GeometryCollection")
			}
			c = append(c, part)
		}
		return c, nil
	}
	p := refCoordParser{b: g.Coordinates}
	var out orb.Geometry
	var err error
	switch g.Type {
	case "Point":
		out, err = p.position()
	case "MultiPoint":
		var ps []orb.Point
		ps, err = p.positions()
		out = orb.MultiPoint(ps)
	case "LineString":
		var ps []orb.Point
		ps, err = p.positions()
		if err == nil && len(ps) < 2 {
			err = fmt.Errorf("LineString with %d positions", len(ps))
		}
		out = orb.LineString(ps)
	case "MultiLineString":
		var ls [][]orb.Point
		ls, err = p.lines()
		ml := make(orb.MultiLineString, len(ls))
		for i, l := range ls {
			ml[i] = l
		}
		out = ml
	case "Polygon":
		var rs [][]orb.Point
		rs, err = p.lines()
		out = refToPolygon(rs)
	case "MultiPolygon":
		var ps [][][]orb.Point
		ps, err = p.polygons()
		mp := make(orb.MultiPolygon, len(ps))
		for i, rs := range ps {
			mp[i] = refToPolygon(rs)
		}
		out = mp
	case "":
		return nil, errors.New("geojson geometry without a type")
	default:
		return nil, fmt.Errorf("geojson geometry type %q not supported", g.Type)
	}
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, fmt.Errorf("geojson %s coordinates: %w", g.Type, err)
	}
	return out, nil
}

func refToPolygon(rs [][]orb.Point) orb.Polygon {
	p := make(orb.Polygon, len(rs))
	for i, r := range rs {
		p[i] = r
	}
	return p
}

// refCoordParser reads the nested number arrays of "coordinates" without
// building interface values.
type refCoordParser struct {
	b []byte
	i int
}

func (p *refCoordParser) skipSpace() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *refCoordParser) expect(c byte) error {
	p.skipSpace()
	if p.i >= len(p.b) {
		if len(p.b) == 0 {
			return errors.New("missing")
		}
		return fmt.Errorf("want %q, got end", c)
	}
	if p.b[p.i] != c {
		return fmt.Errorf("want %q at offset %d, got %q", c, p.i, p.b[p.i])
	}
	p.i++
	return nil
}

// next reports whether another element follows in an array whose opening
// bracket or previous element was read, consuming the comma or the closing
// bracket.
func (p *refCoordParser) next(first bool) (bool, error) {
	p.skipSpace()
	if p.i >= len(p.b) {
		return false, errors.New("unterminated array")
	}
	switch c := p.b[p.i]; {
	case c == ']':
		p.i++
		return false, nil
	case first:
		return true, nil
	case c == ',':
		p.i++
		return true, nil
	default:
		return false, fmt.Errorf("want ',' or ']' at offset %d, got %q", p.i, c)
	}
}

func (p *refCoordParser) number() (float64, error) {
	p.skipSpace()
	j := p.i
	for j < len(p.b) {
		c := p.b[j]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	if j == p.i {
		return 0, fmt.Errorf("want a number at offset %d", p.i)
	}
	f, err := strconv.ParseFloat(string(p.b[p.i:j]), 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", p.b[p.i:j])
	}
	p.i = j
	return f, nil
}

// position reads [x, y, ...] and keeps x and y.
func (p *refCoordParser) position() (orb.Point, error) {
	var pt orb.Point
	if err := p.expect('['); err != nil {
		return pt, err
	}
	n := 0
	for {
		more, err := p.next(n == 0)
		if err != nil {
			return pt, err
		}
		if !more {
			break
		}
		f, err := p.number()
		if err != nil {
			return pt, err
		}
		if n < 2 {
			pt[n] = f
		}
		n++
	}
	if n < 2 {
		return pt, fmt.Errorf("position with %d values, want at least 2", n)
	}
	return pt, nil
}

func (p *refCoordParser) positions() ([]orb.Point, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var ps []orb.Point
	for {
		more, err := p.next(len(ps) == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return ps, nil
		}
		pt, err := p.position()
		if err != nil {
			return nil, err
		}
		ps = append(ps, pt)
	}
}

func (p *refCoordParser) lines() ([][]orb.Point, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var ls [][]orb.Point
	for {
		more, err := p.next(len(ls) == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return ls, nil
		}
		l, err := p.positions()
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
}

func (p *refCoordParser) polygons() ([][][]orb.Point, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var ps [][][]orb.Point
	for {
		more, err := p.next(len(ps) == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return ps, nil
		}
		rs, err := p.lines()
		if err != nil {
			return nil, err
		}
		ps = append(ps, rs)
	}
}

func (p *refCoordParser) end() error {
	p.skipSpace()
	if p.i != len(p.b) {
		return fmt.Errorf("trailing data at offset %d", p.i)
	}
	return nil
}
