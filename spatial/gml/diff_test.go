package gml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

// chunkReader hands out at most n bytes a Read, so that tokens straddle
// the refills of the scanner's window.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// errClass is what the differential test compares of an error: all of
// feature errors, exception reports and not-features errors, the class and
// message (offset and line included) of the others.
func errClass(err error) string {
	var (
		fe  *spatial.FeatureError
		rep *spatial.ExceptionReport
		nf  *spatial.NotFeaturesError
	)
	switch {
	case err == nil:
		return "nil"
	case err == io.EOF:
		return "EOF"
	case errors.As(err, &fe):
		return fmt.Sprintf("refused %q #%d: %v", fe.ID, fe.Index, fe.Err)
	case errors.As(err, &rep):
		return fmt.Sprintf("exception %+v", *rep)
	case errors.As(err, &nf):
		return fmt.Sprintf("not features %+v", *nf)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated: " + err.Error()
	}
	return "malformed: " + err.Error()
}

// diff reads doc with the Reader and the reference reader and reports the
// first difference.
func diff(doc []byte, opts Options, chunk int) error {
	r := NewReader(&chunkReader{b: doc, n: max(1, chunk)}, opts)
	ref := newRefReader(bytes.NewReader(doc), opts)
	for i := 0; i <= len(doc)+10; i++ {
		f, err := r.Next()
		rf, rerr := ref.Next()
		if got, want := errClass(err), errClass(rerr); got != want {
			return fmt.Errorf("result %d: error %s (%v), reference %s (%v)", i, got, err, want, rerr)
		}
		if !reflect.DeepEqual(f, rf) {
			return fmt.Errorf("result %d: feature\n%#v\nreference\n%#v", i, f, rf)
		}
		if m, rm := r.Meta(), ref.Meta(); m != rm {
			return fmt.Errorf("result %d: meta %+v, reference %+v", i, m, rm)
		}
		var fe *spatial.FeatureError
		if err != nil && !errors.As(err, &fe) {
			return nil
		}
	}
	return errors.New("no final result")
}

// corpusDocs returns the documents of the FuzzGMLReader corpus.
func corpusDocs(t testing.TB) [][]byte {
	paths, _ := filepath.Glob("testdata/fuzz/FuzzGMLReader/*")
	var docs [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if s, ok := strings.CutPrefix(line, "[]byte("); ok {
				doc, err := strconv.Unquote(strings.TrimSuffix(s, ")"))
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				docs = append(docs, []byte(doc))
			}
		}
	}
	return docs
}

const diffHead = `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:a="urn:a" numberMatched="3" numberReturned="2">`

func diffSeeds(t testing.TB) [][]byte {
	var docs [][]byte
	paths, _ := filepath.Glob("testdata/*.xml")
	more, _ := filepath.Glob("testdata/*.json")
	paths = append(paths, more...)
	more, _ = filepath.Glob("testdata/*.txt")
	paths = append(paths, more...)
	more, _ = filepath.Glob("testdata/*.html")
	paths = append(paths, more...)
	for _, p := range paths {
		doc, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	docs = append(docs, corpusDocs(t)...)
	gen, _ := io.ReadAll(newGen(3))
	docs = append(docs, gen)
	member := func(body string) string {
		return diffHead + `<wfs:member><a:f gml:id="f.1">` + body + `</a:f></wfs:member></wfs:FeatureCollection>`
	}
	for _, s := range []string{
		"<?xml version=\"1.0\" encoding=\"windows-1252\"?>" + member("<a:n>\x80\x9f\xe9\xff&amp;</a:n>"),
		"<?xml version=\"1.0\" encoding='latin1'?>\r\n" + member("<a:n>\xe9\r\n\r</a:n>"),
		"<?xml version=\"1.1\"?>" + member(""),
		"<?xml version=\"1.0\" encoding=\"utf-16\"?>" + member(""),
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?><?xml encoding=\"latin1\"?>" + member("<a:n>\xe9</a:n>"),
		"\xef\xbb\xbf<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY e \"v\"> <!-- c > --> ]>" + member("<a:n>x</a:n>"),
		member("<a:n><![CDATA[a<b>&c]]]]><![CDATA[>]]></a:n><a:m>&lt;&gt;&amp;&apos;&quot;&#65;&#x42;&#x1F600;&#xD800;</a:m>"),
		member("<a:n>&#0;</a:n>"),
		member("<a:n>&bogus;</a:n>"),
		member("<a:n>a]]>b</a:n>"),
		member("<a:n>a]]b]>c</a:n>"),
		member("<a:n>\x01</a:n>"),
		member("<a:n>\xff</a:n>"),
		member("<a:n>\xed\xa0\x80</a:n>"),
		member("<a:n>\xef\xbf\xbe</a:n>"),
		member("<a:n>é€😀</a:n><a:é>x</a:é><a:a·b>y</a:a·b>"),
		member("<a:n a=\"&lt;\" b='\"' c=\"\t\r\n\">x</a:n><a:m xlink:href=\"#x\"/><a:o xsi:nil=\"1\"></a:o>"),
		member("<a:n a=\"<\">x</a:n>"),
		member("<a:n a=x>x</a:n>"),
		member("<a:n a>x</a:n>"),
		member("<a:n a=\"1\"b=\"2\">x</a:n>"),
		member("<a:n\t\r\n>x</a:n\n>"),
		member("<a:n>x</a:n x>"),
		member("<a:n:o>x</a:n:o>"),
		member("<:n>x</:n><n:>y</n:>"),
		member("<a:1n>x</a:1n>"),
		member("<a:n><!-- a -- b --></a:n>"),
		member("<a:n><!-- a ---></a:n>"),
		member("<a:n><!--- a ---->y</a:n>"),
		member("<a:n><!- a --></a:n>"),
		member("<a:n><![CDAT[x]]></a:n>"),
		member("<a:n><?pi data ?>x<?pi?></a:n>"),
		member("<a:n><? pi ?>x</a:n>"),
		member("<a:n><!X a 'b>' \"c>\" <d> <!-- > --> >x</a:n>"),
		member("<a:n>x</a:m>"),
		member("<a:n>x</a:n></a:n>"),
		member("<a:n>a&amp</a:n>"),
		member("<a:n>a&#x;</a:n>"),
		member("<a:n>a&#99999999999999999999;</a:n>"),
		member("<a:n>a&#1114112;</a:n>"),
		member("<a:g><gml:Point srsName=\"EPSG:4326\"><gml:pos>1 2</gml:pos></gml:Point></a:g><a:h><gml:LineString><gml:coordinates decimal=\",\" cs=\";\" ts=\" \">1,5;2 3;4</gml:coordinates></gml:LineString></a:h>"),
		member("<a:g><gml:Curve><gml:segments><gml:Arc><gml:posList>0 0 1 1 2 0</gml:posList></gml:Arc></gml:segments></gml:Curve></a:g>"),
		member("<a:c><a:d> x </a:d><a:e>y<gml:Point><gml:pos>1 2</gml:pos></gml:Point></a:e></a:c><a:c>2</a:c><a:c/>"),
		diffHead + `<wfs:truncatedResponse><ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1"><ows:Exception exceptionCode="X"><ows:ExceptionText>t &amp; u</ows:ExceptionText></ows:Exception></ows:ExceptionReport></wfs:truncatedResponse></wfs:FeatureCollection>`,
		`<ServiceExceptionReport version="1.2.0"><ServiceException code="C" locator="l"><![CDATA[bad]]> &amp; worse</ServiceException></ServiceExceptionReport>`,
		`<a:f xmlns:a="urn:a" xmlns:gml="http://www.opengis.net/gml/3.2" gml:id="x"><a:n>1</a:n></a:f>`,
		`<f xmlns="urn:a"><n>1</n></f>`,
		"<x y='1' y='2'/>",
		"text",
		"",
		"  \n",
		"<",
		"<a",
		"</a>",
	} {
		docs = append(docs, []byte(s))
	}
	return docs
}

var diffOptions = []Options{
	{WFSVersion: "2.0.0"},
	{WFSVersion: "1.1.0", DefaultSRS: "EPSG:4326"},
	{WFSVersion: "1.0.0", TypeName: "a:f"},
	{TypeName: "f", DefaultSRS: "urn:ogc:def:crs:EPSG::4326"},
}

func TestDifferential(t *testing.T) {
	docs := diffSeeds(t)
	big, _ := io.ReadAll(newGen(300))
	docs = append(docs, big)
	for i, doc := range docs {
		chunks := []int{1, 7, 4096, 1 << 20}
		switch {
		case testing.Short():
			chunks = chunks[1:2]
		case len(doc) > 4096:
			chunks = chunks[1:]
		}
		for k, chunk := range chunks {
			opts := diffOptions[(i+k)%len(diffOptions)]
			cuts := len(doc) // every offset
			if len(doc) > 4096 {
				cuts = 97
			}
			for cut := 0; cut <= len(doc); cut += max(1, len(doc)/max(1, cuts)) {
				if err := diff(doc[:cut], opts, chunk); err != nil {
					t.Fatalf("doc %d cut at %d, chunk %d: %v\n%q", i, cut, chunk, err, doc[:cut])
				}
			}
			if err := diff(doc, opts, chunk); err != nil {
				t.Fatalf("doc %d, chunk %d: %v\n%q", i, chunk, err, doc)
			}
		}
	}
}

// FuzzGMLDifferential checks that the Reader and the encoding/xml based
// reference reader yield the same features, errors and Meta.
func FuzzGMLDifferential(f *testing.F) {
	for i, doc := range diffSeeds(f) {
		f.Add(doc, uint8(i%len(diffOptions)), uint8(0))
		f.Add(doc, uint8((i+1)%len(diffOptions)), uint8(3))
	}
	f.Fuzz(func(t *testing.T, doc []byte, opt, chunk uint8) {
		n := int(chunk)
		if n == 0 {
			n = 1 << 20
		}
		if err := diff(doc, diffOptions[int(opt)%len(diffOptions)], n); err != nil {
			t.Fatalf("%v\ninput %q", err, doc)
		}
	})
}
