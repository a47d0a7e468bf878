package wfsserver

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// node is a generic XML tree for assertions.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (n *node) attr(local string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// walk calls f for n and every descendant.
func (n *node) walk(f func(*node)) {
	f(n)
	for k := range n.Children {
		n.Children[k].walk(f)
	}
}

// all returns descendants with the local name.
func (n *node) all(local string) []*node {
	var out []*node
	n.walk(func(c *node) {
		if c.XMLName.Local == local {
			out = append(out, c)
		}
	})
	return out
}

func parseXML(t *testing.T, body []byte) *node {
	t.Helper()
	var n node
	if err := xml.Unmarshal(body, &n); err != nil {
		t.Fatalf("response is not XML: %v\n%.500s", err, body)
	}
	return &n
}

// rootElement decodes just the document element's name and attributes.
func rootElement(t *testing.T, body []byte) *node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("response is not XML: %v\n%.500s", err, body)
		}
		if se, ok := tok.(xml.StartElement); ok {
			return &node{XMLName: se.Name, Attrs: se.Attr}
		}
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
	err    error // body read error (truncation)
}

func get(t *testing.T, ts *httptest.Server, query string) response {
	t.Helper()
	resp, err := http.Get(ts.URL + "/wfs?" + query)
	if err != nil {
		t.Fatalf("GET %s: %v", query, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

func post(t *testing.T, ts *httptest.Server, body string) response {
	t.Helper()
	resp, err := http.Post(ts.URL+"/wfs", "application/xml", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

func newTestServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s := New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// featureIDs finds gml:id="name.N" and fid="name.N" attributes; geometry
// ids (name.N.geom) are skipped because a quote must follow the digits. A
// hand-written scan: regexp over megabytes of GML was the slowest part of
// the tests.
func featureIDs(body []byte) []int {
	var ids []int
	for pos := 0; ; {
		k := bytes.Index(body[pos:], []byte(`id="`))
		if k < 0 {
			return ids
		}
		pos += k + 4
		dot := bytes.IndexByte(body[pos:], '.')
		if dot < 0 {
			return ids
		}
		j := pos + dot + 1
		n, digits := 0, 0
		for ; j < len(body) && body[j] >= '0' && body[j] <= '9'; j++ {
			n = n*10 + int(body[j]-'0')
			digits++
		}
		if digits > 0 && j < len(body) && body[j] == '"' {
			ids = append(ids, n)
		}
	}
}

// page is one parsed GetFeature response.
type page struct {
	ids            []int
	numberMatched  string
	numberReturned string
	next           string
}

// parsePage extracts feature ids and counts from GML (any version) or
// GeoJSON.
func parsePage(t *testing.T, r response) page {
	t.Helper()
	if r.status != http.StatusOK || r.err != nil {
		t.Fatalf("status %d, read error %v: %.500s", r.status, r.err, r.body)
	}
	var p page
	if bytes.HasPrefix(r.body, []byte("{")) {
		var fc struct {
			NumberMatched  *int `json:"numberMatched"`
			NumberReturned int  `json:"numberReturned"`
			Features       []struct {
				ID string `json:"id"`
			} `json:"features"`
			Links []struct{ Rel, Href string } `json:"links"`
		}
		if err := json.Unmarshal(r.body, &fc); err != nil {
			t.Fatalf("response is not JSON: %v", err)
		}
		for _, f := range fc.Features {
			_, n, _ := strings.Cut(f.ID, ".")
			i, _ := strconv.Atoi(n)
			p.ids = append(p.ids, i)
		}
		p.numberMatched = "unknown"
		if fc.NumberMatched != nil {
			p.numberMatched = strconv.Itoa(*fc.NumberMatched)
		}
		p.numberReturned = strconv.Itoa(fc.NumberReturned)
		for _, l := range fc.Links {
			if l.Rel == "next" {
				p.next = l.Href
			}
		}
		return p
	}
	// Only the root element is decoded: encoding/xml on whole pages made the
	// tests slow. Well-formedness of full pages is checked elsewhere.
	root := rootElement(t, r.body)
	if root.XMLName.Local != "FeatureCollection" {
		t.Fatalf("root is %s, not FeatureCollection: %.300s", root.XMLName.Local, r.body)
	}
	p.numberMatched = root.attr("numberMatched")
	p.numberReturned = cmpOr(root.attr("numberReturned"), root.attr("numberOfFeatures"))
	p.next = root.attr("next")
	p.ids = featureIDs(r.body)
	return p
}

func kvp(pairs ...string) string {
	v := url.Values{}
	for k := 0; k+1 < len(pairs); k += 2 {
		v.Set(pairs[k], pairs[k+1])
	}
	return v.Encode()
}
