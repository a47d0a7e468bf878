package spatial_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/spatial/gml"
)

// small are limits a test can pass with a few kilobytes.
var small = spatial.Limits{StringBytes: 1000, FeatureBytes: 100_000, Depth: 20, Vertices: 100}

const wfsHead = `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:app="http://a">`
const wfsTail = `</wfs:FeatureCollection>`

func member(id, body string) string {
	return `<wfs:member><app:f gml:id="` + id + `">` + body + `</app:f></wfs:member>`
}

func posList(n int) string {
	var b strings.Builder
	b.WriteString(`<gml:LineString srsName="urn:ogc:def:crs:EPSG::3857"><gml:posList>`)
	for i := range n {
		fmt.Fprintf(&b, "%d %d ", i, i)
	}
	b.WriteString(`</gml:posList></gml:LineString>`)
	return b.String()
}

func jsonLine(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"LineString","coordinates":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%d,%d]", i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func jsonDoc(features ...string) string {
	return `{"type":"FeatureCollection","features":[` + strings.Join(features, ",") + `]}`
}

// TestLimits shows every limit ending both readers with a *spatial.TooLargeError that
// names the limit and the feature, and features within the limits read as before.
func TestLimits(t *testing.T) {
	x := strings.Repeat("x", 2000)
	deepXML := strings.Repeat("<app:a>", 30) + strings.Repeat("</app:a>", 30)
	deepJSON := strings.Repeat("[", 30) + strings.Repeat("]", 30)
	manyProps := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "<app:p%d>%s</app:p%d>", i, x[:40], i)
		}
		return b.String()
	}
	manyJSONProps := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":"%s"`, i, x[:40])
		}
		return b.String()
	}
	for _, c := range []struct {
		name   string
		json   bool
		doc    string
		limit  string // "" reads to the end
		index  int
		id     string
		before int // features read before the error
	}{
		{name: "gml within limits", doc: wfsHead + member("a", "<app:g>"+posList(90)+"</app:g>") + member("b", "<app:g>"+posList(90)+"</app:g>") + wfsTail, before: 2},
		{name: "gml long text", doc: wfsHead + member("a", "<app:p>"+x+"</app:p>") + wfsTail, limit: "max_string_bytes", id: "a"},
		{name: "gml text in pieces", doc: wfsHead + member("a", "<app:p>"+strings.Repeat(x[:100]+"<!---->", 20)+"</app:p>") + wfsTail, limit: "max_string_bytes", id: "a"},
		{name: "gml complex property", doc: wfsHead + member("a", "<app:p>"+strings.Repeat("<app:q>"+x[:100]+"</app:q>", 20)+"</app:p>") + wfsTail, limit: "max_string_bytes", id: "a"},
		{name: "gml long attribute", doc: wfsHead + member("a", `<app:p app:x="`+x+`">1</app:p>`) + wfsTail, limit: "max_string_bytes", id: "a"},
		{name: "gml text outside features", doc: wfsHead + x + member("a", "") + wfsTail, limit: "max_string_bytes", index: -1},
		{name: "gml nesting", doc: wfsHead + member("a", "<app:p>"+deepXML+"</app:p>") + wfsTail, limit: "max_depth", id: "a"},
		{name: "gml nesting outside features", doc: wfsHead + deepXML + wfsTail, limit: "max_depth", index: -1},
		{name: "gml posList", doc: wfsHead + member("a", "<app:g>"+posList(101)+"</app:g>") + wfsTail, limit: "max_vertices", id: "a"},
		{name: "gml vertices summed over geometries", doc: wfsHead + member("a", "<app:g>"+posList(60)+"</app:g><app:h>"+posList(60)+"</app:h>") + wfsTail, limit: "max_vertices", id: "a"},
		{name: "gml second feature", doc: wfsHead + member("a", "") + member("b", "<app:g>"+posList(200)+"</app:g>") + wfsTail, limit: "max_vertices", index: 1, id: "b", before: 1},
		{name: "gml coordinates", doc: wfsHead + member("a", `<app:g><gml:LineString><gml:coordinates>`+strings.Repeat("1,1 ", 101)+`</gml:coordinates></gml:LineString></app:g>`) + wfsTail, limit: "max_vertices", id: "a"},
		{name: "gml pos elements", doc: wfsHead + member("a", `<app:g><gml:LineString>`+strings.Repeat("<gml:pos>1 1</gml:pos>", 101)+`</gml:LineString></app:g>`) + wfsTail, limit: "max_vertices", id: "a"},
		{name: "gml feature bytes", doc: wfsHead + member("a", manyProps(3000)) + wfsTail, limit: "max_feature_bytes", id: "a"},
		{name: "gml unterminated text", doc: wfsHead + `<wfs:member><app:f gml:id="a"><app:p>` + strings.Repeat(x, 10), limit: "max_string_bytes", id: "a"},

		{name: "json within limits", json: true, doc: jsonDoc(`{"type":"Feature","geometry":`+jsonLine(90)+`}`, `{"type":"Feature","geometry":`+jsonLine(90)+`}`), before: 2},
		{name: "json long string", json: true, doc: jsonDoc(`{"type":"Feature","properties":{"p":"` + x + `"}}`), limit: "max_string_bytes"},
		{name: "json unterminated string", json: true, doc: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"p":"` + strings.Repeat(x, 100), limit: "max_string_bytes"},
		{name: "json long number", json: true, doc: jsonDoc(`{"type":"Feature","properties":{"p":1` + strings.Repeat("0", 2000) + `}}`), limit: "max_string_bytes"},
		{name: "json nesting", json: true, doc: jsonDoc(`{"type":"Feature","properties":{"p":` + deepJSON + `}}`), limit: "max_depth"},
		{name: "json vertices", json: true, doc: jsonDoc(`{"type":"Feature","geometry":` + jsonLine(101) + `}`), limit: "max_vertices"},
		{name: "json vertices summed over a collection", json: true, doc: jsonDoc(`{"type":"Feature","geometry":{"type":"GeometryCollection","geometries":[` + jsonLine(60) + `,` + jsonLine(60) + `]}}`), limit: "max_vertices"},
		{name: "json second feature", json: true, doc: jsonDoc(`{"type":"Feature","properties":{}}`, `{"type":"Feature","geometry":`+jsonLine(200)+`}`), limit: "max_vertices", index: 1, before: 1},
		{name: "json feature bytes", json: true, doc: jsonDoc(`{"type":"Feature","properties":{` + manyJSONProps(3000) + `}}`), limit: "max_feature_bytes"},
		{name: "json single feature vertices", json: true, doc: `{"type":"Feature","geometry":` + jsonLine(101) + `,"properties":{}}`, limit: "max_vertices"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r spatial.Reader
			if c.json {
				r = geojson.NewReader(strings.NewReader(c.doc), geojson.Options{Limits: small})
			} else {
				r = gml.NewReader(strings.NewReader(c.doc), gml.Options{Limits: small})
			}
			n := 0
			var err error
			for {
				if _, err = r.Next(); err != nil {
					break
				}
				n++
			}
			if n != c.before {
				t.Errorf("%d features before the error, want %d", n, c.before)
			}
			if c.limit == "" {
				if err != io.EOF {
					t.Fatalf("err %v, want io.EOF", err)
				}
				return
			}
			var tl *spatial.TooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, spatial.ErrTooLarge) {
				t.Fatalf("err %v (%T), want a *spatial.TooLargeError", err, err)
			}
			if tl.Limit != c.limit || tl.Index != c.index || tl.ID != c.id {
				t.Errorf("limit %q feature %q #%d; want %q %q #%d (%v)", tl.Limit, tl.ID, tl.Index, c.limit, c.id, c.index, err)
			}
			if !strings.Contains(err.Error(), "limits."+c.limit) {
				t.Errorf("%q does not name the key to raise", err)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("Next after the error: %v, want the same error", again)
			}
		})
	}
}

// endless repeats s for ever after head: a response that never ends.
type endless struct {
	head string
	s    string
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if e.head != "" {
			c := copy(p[n:], e.head)
			e.head = e.head[c:]
			n += c
			continue
		}
		c := copy(p[n:], e.s[e.off:])
		e.off = (e.off + c) % len(e.s)
		n += c
	}
	return n, nil
}

// TestDefaultLimitsStopEndlessFeatures shows the default limits ending a feature that
// never ends (an unterminated string, endless nesting) instead of reading it into memory
// for ever.
func TestDefaultLimitsStopEndlessFeatures(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     spatial.Reader
		limit string
	}{
		{"json string", geojson.NewReader(&endless{head: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":"`, s: "xxxxxxxx"}, geojson.Options{}), "max_string_bytes"},
		{"json properties", geojson.NewReader(&endless{head: `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":1`, s: `,"a":1`}, geojson.Options{}), "max_feature_bytes"},
		{"gml text", gml.NewReader(&endless{head: wfsHead + `<wfs:member><app:f gml:id="a"><app:p>`, s: "xxxxxxxx"}, gml.Options{}), "max_string_bytes"},
		{"gml nesting", gml.NewReader(&endless{head: wfsHead + `<wfs:member><app:f gml:id="a"><app:p>`, s: "<app:a>"}, gml.Options{}), "max_depth"},
		{"gml properties", gml.NewReader(&endless{head: wfsHead + `<wfs:member><app:f gml:id="a">`, s: "<app:p>1</app:p>"}, gml.Options{}), "max_feature_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.r.Next()
			var tl *spatial.TooLargeError
			if !errors.As(err, &tl) || tl.Limit != c.limit {
				t.Fatalf("err %v, want a *spatial.TooLargeError for %s", err, c.limit)
			}
		})
	}
}

// TestLimitsAreExact: a feature or a value exactly at a limit passes, one byte more does
// not, in both readers (the GeoJSON window once let features through up to twice its
// limit, and counted a string's opening quote).
func TestLimitsAreExact(t *testing.T) {
	lim := spatial.Limits{StringBytes: 100, FeatureBytes: 200_000}
	str := func(n int) string { return strings.Repeat("x", n) }
	read := func(r spatial.Reader) error {
		for {
			if _, err := r.Next(); err != nil {
				return err
			}
		}
	}
	for _, c := range []struct {
		name  string
		json  bool
		doc   string
		limit string
	}{
		{"json value at the limit", true, jsonDoc(`{"type":"Feature","properties":{"p":"` + str(100) + `"}}`), ""},
		{"json value one over", true, jsonDoc(`{"type":"Feature","properties":{"p":"` + str(101) + `"}}`), "max_string_bytes"},
		{"gml value at the limit", false, wfsHead + member("a", "<app:p>"+str(100)+"</app:p>") + wfsTail, ""},
		{"gml value one over", false, wfsHead + member("a", "<app:p>"+str(101)+"</app:p>") + wfsTail, "max_string_bytes"},
		{"json feature of 126 KB under a 100 KB limit", true, jsonDoc(`{"type":"Feature","properties":{` + strings.TrimSuffix(strings.Repeat(`"p":"`+str(90)+`",`, 1400), ",") + `}}`), "max_feature_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.json {
				l := lim
				l.FeatureBytes = 100_000
				err = read(geojson.NewReader(strings.NewReader(c.doc), geojson.Options{Limits: l}))
			} else {
				err = read(gml.NewReader(strings.NewReader(c.doc), gml.Options{Limits: lim}))
			}
			var tl *spatial.TooLargeError
			switch {
			case c.limit == "" && err != io.EOF:
				t.Errorf("err %v, want the document read", err)
			case c.limit != "" && (!errors.As(err, &tl) || tl.Limit != c.limit):
				t.Errorf("err %v, want %s", err, c.limit)
			}
		})
	}
}
