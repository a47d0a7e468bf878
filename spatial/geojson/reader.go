// Package geojson streams the features of a GeoJSON FeatureCollection, as
// WFS servers answer GetFeature with outputFormat=application/json. The
// response is read through a window that holds at most the feature being
// decoded, and each feature is decoded in one pass over its bytes, so
// memory stays flat however many features the response holds. Values and
// the messages of refused features are what encoding/json, which the
// reader used before, made of them.
//
// Properties keep their JSON types: float64, string, bool, nil, []any and
// map[string]any. The feature ID is the "id" member: a string as is, a
// number as written in the document (so 12 stays "12"), absent or null as "".
// Geometry coordinates beyond the second (z, m) are dropped.
//
// Collection members may come before or after "features": numberMatched
// and numberReturned (WFS 2.0), totalFeatures (GeoServer, may be
// "unknown"), links with rel "next", and a "crs" name (GeoServer's legacy
// member). Meta is complete once Next has returned io.EOF.
//
// A JSON exception ({"exceptions":[...]} as GeoServer writes it,
// {"error":{...}} as ArcGIS does, {"code":..,"description":..} as OGC API
// servers do) and an XML exception report (servers answer errors in XML
// whatever format was asked) give a *spatial.ExceptionReport. Other bodies
// (HTML, text, JSON that is not a collection or feature) give a
// *spatial.NotFeaturesError, and a body cut off early an error matching
// io.ErrUnexpectedEOF.
package geojson

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

// Options tunes a Reader. The zero value takes coordinates as lon/lat, as
// RFC 7946 says.
type Options struct {
	// SwapXY exchanges x and y of every coordinate: set it when the caller
	// decided (spatial.LooksSwapped, or knowledge of the server) that the
	// server wrote lat/lon into GeoJSON.
	SwapXY bool
	// Limits bound one feature; zero fields take spatial.DefaultLimits. Passing one
	// ends the reader with a *spatial.TooLargeError.
	Limits spatial.Limits
}

// Reader decodes a GeoJSON response one feature at a time. It implements
// spatial.Reader. A Reader is not safe for concurrent use.
type Reader struct {
	opts Options
	s    scanner
	// meter, when the source charges what is read to a memory budget, is told where
	// each feature starts.
	meter spatial.FeatureMeter
	peek  []byte // the first bytes of the body, for NotFeaturesError

	started      bool
	firstMember  bool // no member of the top-level object read yet
	inFeatures   bool
	firstFeature bool // no member of "features" read yet
	sawFeatures  bool
	err          error
	index        int
	meta         spatial.Meta
	total        int64 // totalFeatures, -1 unknown

	typ     string
	exc     *spatial.ExceptionReport
	code    string // OGC API exception "code"
	descr   string // OGC API exception "description"
	single  singleFeature
	singleN int // members of a top-level Feature seen

	// Reused across features.
	scratch []byte            // unescaped strings
	keys    map[string]string // interned property names
	slots   []propSlot        // the previous feature's properties
	nprops  int               // how many properties the previous feature had
	reuse   bool              // ReuseFeatures was called
	spare   map[string]any    // the map handed out before, when reuse
	feat    spatial.Feature   // the feature handed out, when reuse
	// ptArena and ringArena hold the current feature's coordinates and rings when reuse,
	// from the first element at every feature.
	ptArena   []orb.Point
	ringArena []orb.Ring
	vertices  int          // of the feature's geometries decoded so far
	strs      []byte       // string properties of the current object, and the id
	idA, idB  int          // the string id in strs
	idState   int          // where the string id is: idNone, idPending, idResolved
	sid       string       // the string id once resolved
	pending   []pendingStr // where they go
	pts       []orb.Point  // coordinates read
	ends      []int        // ends of lines in pts
	polys     []int        // ends of polygons in ends
}

// singleFeature holds the members of a top-level Feature (GetFeatureById)
// until the object ends: the raw id and geometry, the properties decoded.
type singleFeature struct {
	id, geometry []byte
	props        map[string]any
}

var _ spatial.Reader = (*Reader)(nil)

// NewReader returns a Reader of the GeoJSON response in r. It reads r only
// when Next is called, through its own buffer.
func NewReader(r io.Reader, opts Options) *Reader {
	opts.Limits = opts.Limits.OrDefault()
	meter, _ := r.(spatial.FeatureMeter)
	return &Reader{
		meter: meter,
		opts:  opts,
		s:     newScanner(r, opts.Limits),
		meta:  spatial.UnknownMeta(),
		total: -1,
		keys:  make(map[string]string),
	}
}

// Meta returns what the collection's members said. Members after
// "features" are known only once Next has returned io.EOF.
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
			return nil, r.setErr(err)
		}
		if err := r.members(); err != nil {
			return nil, r.setErr(err)
		}
	}
	s := &r.s
	if r.inFeatures {
		c, err := s.peek()
		if err != nil {
			return nil, r.setErr(err)
		}
		if c == ']' {
			s.pos++
			r.inFeatures = false
			if err := r.members(); err != nil {
				return nil, r.setErr(err)
			}
			return r.finish() // members() returned at the end of the top-level object
		}
		if !r.firstFeature {
			if c != ',' {
				return nil, r.setErr(s.syntaxErr("after a member of \"features\""))
			}
			s.pos++
			if _, err := s.peek(); err != nil {
				return nil, r.setErr(err)
			}
		}
		r.firstFeature = false
		f, err := r.feature()
		if err != nil {
			if _, ok := err.(*spatial.FeatureError); ok {
				return nil, err
			}
			if tl, ok := err.(*spatial.TooLargeError); ok && tl.Index < 0 {
				tl.Index = r.index
			}
			return nil, r.setErr(err)
		}
		return f, nil
	}
	// members() returned at the end of the top-level object.
	return r.finish()
}

func (r *Reader) setErr(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// begin classifies the body from its first bytes and reads the opening
// brace of the top-level object.
func (r *Reader) begin() error {
	s := &r.s
	for s.end < 512 && s.fill() {
	}
	peek := s.buf[:min(s.end, 512)]
	r.peek = bytes.Clone(peek)
	switch k := sniff.Kind(peek); k {
	case "empty":
		if s.rerr != nil && s.rerr != io.EOF {
			return fmt.Errorf("geojson: reading response: %w", s.rerr)
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
	if bytes.HasPrefix(peek, []byte("\xef\xbb\xbf")) {
		s.pos = 3
	}
	if err := s.expect('{', "looking for the beginning of the response"); err != nil {
		return err
	}
	r.firstMember = true
	return nil
}

func (r *Reader) notFeatures() error {
	return &spatial.NotFeaturesError{Kind: "json", Snippet: spatial.Snippet(r.peek, 200)}
}

// errReader returns err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// xmlBody reads an XML body: an OGC exception report, or something else.
func (r *Reader) xmlBody() error {
	s := &r.s
	rest := s.src
	if s.rerr != nil {
		rest = errReader{s.rerr}
	}
	d := xml.NewDecoder(io.MultiReader(bytes.NewReader(s.buf[s.pos:s.end]), rest))
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

// members reads top-level members until the "features" array opens (then
// inFeatures is set) or the top-level object ends.
func (r *Reader) members() error {
	s := &r.s
	for {
		more, err := s.next(r.firstMember, '}')
		r.firstMember = false
		if err != nil || !more {
			return err
		}
		k, err := s.key(&r.scratch)
		if err != nil {
			return err
		}
		key := string(k)
		if err := s.colon(); err != nil {
			return err
		}
		if err := r.member(key); err != nil {
			return err
		}
		if r.inFeatures {
			return nil
		}
	}
}

// member reads the value of the top-level member key at pos. Only
// "features" is walked here; the others are few and small, so they are
// checked and then decoded with encoding/json as the reader always did.
func (r *Reader) member(key string) error {
	s := &r.s
	s.depth = 0
	if key == "features" {
		return r.featuresMember()
	}
	if !decodedMember(key) {
		return s.skip(false)
	}
	start := s.offset()
	s.pin = start
	defer func() { s.pin = -1 }()
	if err := s.skip(false); err != nil {
		return err
	}
	if !r.decodeMember(key, s.buf[start-s.base:s.pos]) {
		return r.notFeatures()
	}
	return nil
}

// featuresMember reads the value of "features" at pos: an array opens it, null
// is a collection without features, and anything else is not a collection.
func (r *Reader) featuresMember() error {
	s := &r.s
	switch s.buf[s.pos] {
	case '[':
		s.pos++
		r.inFeatures, r.firstFeature, r.sawFeatures = true, true, true
		return nil
	case 'n':
		if _, err := s.literal(); err != nil {
			return err
		}
		r.sawFeatures = true
		return nil
	}
	// Not a collection; an object is read to its end first.
	if err := s.skip(true); err != nil {
		return err
	}
	return r.notFeatures()
}

// decodedMember tells whether the top-level member key says something about
// the response, so that its value is decoded rather than skipped.
func decodedMember(key string) bool {
	switch key {
	case "numberMatched", "numberReturned", "totalFeatures", "links", "crs", "type",
		"exceptions", "error", "code", "description", "id", "geometry", "properties":
		return true
	}
	return false
}

// decodeMember keeps what the top-level member key says, of its value raw. It
// reports false, keeping nothing, for a value encoding/json cannot decode as
// the member's type.
func (r *Reader) decodeMember(key string, raw []byte) bool {
	switch key {
	case "numberMatched", "numberReturned", "totalFeatures":
		n, ok := countMember(raw)
		if ok {
			*r.countOf(key) = n
		}
		return ok
	case "links":
		next, ok := nextLink(raw, r.meta.Next)
		r.meta.Next = next
		return ok
	case "crs":
		name, ok := crsName(raw)
		if ok {
			r.meta.SRSName = name
		}
		return ok
	case "exceptions":
		rep, ok := exceptionsReport(raw)
		if ok {
			r.exc = rep
		}
		return ok
	case "id":
		// Members of a top-level Feature (GetFeatureById), read as a
		// member of "features" is once the object ends.
		r.single.id = append(r.single.id[:0], raw...)
		r.singleN++
		return true
	case "geometry":
		r.single.geometry = append(r.single.geometry[:0], raw...)
		r.singleN++
		return true
	case "properties":
		if json.Unmarshal(raw, &r.single.props) != nil {
			return false
		}
		r.singleN++
		return true
	}
	// "type", "error", "code", "description": any JSON value.
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch key {
	case "type":
		r.typ, _ = v.(string)
	case "error":
		r.errorMember(v)
	case "code":
		r.code = scalarText(v)
	case "description":
		r.descr = scalarText(v)
	}
	return true
}

// countOf is where the count member key is kept.
func (r *Reader) countOf(key string) *int64 {
	switch key {
	case "numberMatched":
		return &r.meta.NumberMatched
	case "numberReturned":
		return &r.meta.NumberReturned
	}
	return &r.total
}

// countMember reads a count member (numberMatched, numberReturned,
// totalFeatures) as count does; ok is false when raw is not JSON.
func countMember(raw []byte) (n int64, ok bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false
	}
	return count(v), true
}

// nextLink returns the href of the first link of rel "next" in the links
// array raw, or next when that is set already; ok is false when raw is not
// an array of links.
func nextLink(raw []byte, next string) (string, bool) {
	var links []struct {
		Href string `json:"href"`
		Rel  string `json:"rel"`
	}
	if err := json.Unmarshal(raw, &links); err != nil {
		return next, false
	}
	for _, l := range links {
		if l.Rel == "next" && next == "" {
			next = l.Href
		}
	}
	return next, true
}

// crsName returns the name of the legacy "crs" member raw.
func crsName(raw []byte) (string, bool) {
	var crs struct {
		Properties struct {
			Name string `json:"name"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &crs); err != nil {
		return "", false
	}
	return crs.Properties.Name, true
}

// exceptionsReport makes the report of GeoServer's "exceptions" array raw:
// the code and locator of the first exception, the texts of all.
func exceptionsReport(raw []byte) (*spatial.ExceptionReport, bool) {
	var exs []struct {
		Code    string `json:"code"`
		Locator string `json:"locator"`
		Text    string `json:"text"`
	}
	if err := json.Unmarshal(raw, &exs); err != nil {
		return nil, false
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
	return rep, true
}

func (r *Reader) errorMember(v any) {
	rep := &spatial.ExceptionReport{}
	switch e := v.(type) {
	case map[string]any:
		rep.Code = scalarText(e["code"])
		rep.Text = scalarText(e["message"])
		if d, ok := e["details"].([]any); ok {
			for _, x := range d {
				if s := strings.TrimSpace(scalarText(x)); s != "" {
					rep.Text = strings.TrimPrefix(rep.Text+"; "+s, "; ")
				}
			}
		}
	default:
		rep.Text = scalarText(v)
	}
	r.exc = rep
}

func scalarText(v any) string {
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
func count(v any) int64 {
	f, ok := v.(float64)
	if !ok || f < 0 || f > 1<<53 {
		return -1
	}
	return int64(f)
}

// finish ends the reading once the top-level object has closed.
func (r *Reader) finish() (*spatial.Feature, error) {
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
		return r.singleFeature()
	case !r.sawFeatures:
		return nil, r.setErr(r.notFeatures())
	}
	r.err = io.EOF
	return nil, io.EOF
}

// singleFeature makes the feature of a top-level Feature object.
func (r *Reader) singleFeature() (*spatial.Feature, error) {
	idx := r.index
	r.index++
	saved := r.s
	defer func() { r.s = saved }()
	var id string
	if raw := r.single.id; len(raw) > 0 && string(raw) != "null" {
		id = string(raw)
		if raw[0] == '"' {
			r.s = bytesScanner(raw)
			b, _ := r.s.str(&r.scratch)
			id = string(b)
		}
	}
	var g orb.Geometry
	if raw := r.single.geometry; len(raw) > 0 {
		r.s = bytesScanner(raw)
		r.vertices = 0
		var gerr, err error
		g, gerr, err = r.geometry(0)
		if tl, ok := err.(*spatial.TooLargeError); ok {
			// The bytes were read whole already; only the vertices can be too many.
			tl.Index = idx
			r.err = tl
			return nil, tl
		}
		if gerr != nil {
			return nil, &spatial.FeatureError{ID: id, Index: idx, Err: gerr}
		}
	}
	props := r.single.props
	if props == nil {
		props = map[string]any{}
	}
	return &spatial.Feature{ID: id, Geometry: g, Properties: props}, nil
}
