package gml

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/geoflow/geoflow/spatial"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// versionFor picks the WFS version a fixture was requested with from its
// name.
func versionFor(name string) string {
	switch {
	case strings.Contains(name, "wfs10"):
		return "1.0.0"
	case strings.Contains(name, "wfs11"):
		return "1.1.0"
	}
	return "2.0.0"
}

// dump reads every feature and renders them, the errors and the Meta as
// text for golden comparison.
func dump(r *Reader) string {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		f, err := r.Next()
		if err == io.EOF {
			b.WriteString("EOF\n")
			break
		}
		if err != nil {
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				fmt.Fprintf(&b, "refused %q #%d: %v\n", fe.ID, fe.Index, fe.Err)
				continue
			}
			fmt.Fprintf(&b, "error %T: %v\n", err, err)
			break
		}
		fmt.Fprintf(&b, "feature %q\n", f.ID)
		if f.Geometry == nil {
			b.WriteString("  geometry: nil\n")
		} else {
			fmt.Fprintf(&b, "  geometry: %s\n", wkt.MarshalString(f.Geometry))
		}
		keys := make([]string, 0, len(f.Properties))
		for k := range f.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v, _ := json.Marshal(f.Properties[k])
			fmt.Fprintf(&b, "  %s: %s\n", k, v)
		}
	}
	m := r.Meta()
	fmt.Fprintf(&b, "meta: matched=%d returned=%d next=%q srs=%q\n", m.NumberMatched, m.NumberReturned, m.Next, m.SRSName)
	return b.String()
}

func fixtures(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, pat := range []string{"*.xml", "*.html", "*.txt", "*.json"} {
		m, err := filepath.Glob(filepath.Join("testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	slices.Sort(names)
	return names
}

func TestGolden(t *testing.T) {
	for _, path := range fixtures(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			doc, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := dump(NewReader(bytes.NewReader(doc), Options{WFSVersion: versionFor(name)}))
			golden := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		version string
		check   func(t *testing.T, err error)
	}{
		{name: "ows 1.1 exception report", doc: "exception-ows11.xml", check: func(t *testing.T, err error) {
			var rep *spatial.ExceptionReport
			if !errors.As(err, &rep) || rep.Code != "InvalidParameterValue" || rep.Locator != "typeName" ||
				rep.Text != "Feature type topp:nope unknown" || rep.Version != "1.0.0" {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "ows 2.0 exception report with two texts", doc: "exception-ows20.xml", check: func(t *testing.T, err error) {
			var rep *spatial.ExceptionReport
			if !errors.As(err, &rep) || rep.Code != "OperationProcessingFailed" ||
				!strings.Contains(rep.Text, "; java.sql.SQLException") {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "WFS 1.0 ServiceExceptionReport", doc: "exception-wfs10.xml", version: "1.0.0", check: func(t *testing.T, err error) {
			var rep *spatial.ExceptionReport
			if !errors.As(err, &rep) || rep.Code != "InvalidParameterValue" || rep.Locator != "typename" ||
				!strings.HasPrefix(rep.Text, "msWFSGetFeature(): WFS server error.") || rep.Version != "1.2.0" {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "proxy HTML page", doc: "proxy-502.html", check: func(t *testing.T, err error) {
			var nf *spatial.NotFeaturesError
			if !errors.As(err, &nf) || nf.Kind != "html" || !strings.Contains(nf.Snippet, "502 Bad Gateway") {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "XHTML page with XML prolog", doc: "xhtml-error.xml", check: func(t *testing.T, err error) {
			var nf *spatial.NotFeaturesError
			if !errors.As(err, &nf) || nf.Kind != "html" {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "plain text", doc: "plain.txt", check: func(t *testing.T, err error) {
			var nf *spatial.NotFeaturesError
			if !errors.As(err, &nf) || nf.Kind != "text" || nf.Snippet != "Service Temporarily Unavailable" {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "JSON error object", doc: "json-error.json", check: func(t *testing.T, err error) {
			var nf *spatial.NotFeaturesError
			if !errors.As(err, &nf) || nf.Kind != "json" {
				t.Errorf("got %#v", err)
			}
		}},
		{name: "truncatedResponse after a feature", doc: "truncated-response-wfs20.xml", check: func(t *testing.T, err error) {
			var rep *spatial.ExceptionReport
			if !errors.As(err, &rep) || rep.Code != "ResponseCacheExpired" {
				t.Errorf("got %#v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join("testdata", tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(doc), Options{WFSVersion: tt.version})
			var last error
			for {
				_, err := r.Next()
				if err == nil {
					continue
				}
				last = err
				break
			}
			tt.check(t, last)
			if _, err := r.Next(); err != last {
				t.Errorf("second Next after a final error = %v, want the same error", err)
			}
		})
	}
}

func TestInlineDocuments(t *testing.T) {
	const head = `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:a="urn:a">`
	tests := []struct {
		name string
		doc  string
		opts Options
		want []string // WKT of each feature's geometry, or "error: <substring>"
	}{
		{name: "empty collection", doc: head + `</wfs:FeatureCollection>`},
		{name: "default SRS swaps lat/lon", opts: Options{DefaultSRS: "urn:ogc:def:crs:EPSG::4326"},
			doc:  head + `<wfs:member><a:f><a:g><gml:Point><gml:pos>50 7</gml:pos></gml:Point></a:g></a:f></wfs:member></wfs:FeatureCollection>`,
			want: []string{"POINT(7 50)"}},
		{name: "WFS 1.0 never swaps", opts: Options{WFSVersion: "1.0.0", DefaultSRS: "urn:ogc:def:crs:EPSG::4326"},
			doc:  head + `<wfs:member><a:f><a:g><gml:Point><gml:pos>50 7</gml:pos></gml:Point></a:g></a:f></wfs:member></wfs:FeatureCollection>`,
			want: []string{"POINT(50 7)"}},
		{name: "srsDimension 3 on the geometry", doc: head + `<wfs:member><a:f><a:g><gml:LineString srsDimension="3"><gml:posList>1 2 3 4 5 6</gml:posList></gml:LineString></a:g></a:f></wfs:member></wfs:FeatureCollection>`,
			want: []string{"LINESTRING(1 2,4 5)"}},
		{name: "posList not divisible", doc: head + `<wfs:member><a:f><a:g><gml:LineString srsDimension="3"><gml:posList>1 2 3 4 5</gml:posList></gml:LineString></a:g></a:f></wfs:member></wfs:FeatureCollection>`,
			want: []string{"error: do not divide"}},
		{name: "nested collection of a multi-query response", doc: head + `<wfs:member><wfs:FeatureCollection><wfs:member><a:f gml:id="x"><a:n>1</a:n></a:f></wfs:member></wfs:FeatureCollection></wfs:member><wfs:member><a:f gml:id="y"/></wfs:member></wfs:FeatureCollection>`,
			want: []string{"nil", "nil"}},
		{name: "bare feature of GetFeatureById", opts: Options{TypeName: "a:f"}, doc: `<a:f xmlns:a="urn:a" xmlns:gml="http://www.opengis.net/gml/3.2"><a:g><gml:Point><gml:pos>1 2</gml:pos></gml:Point></a:g></a:f>`,
			want: []string{"POINT(1 2)"}},
		{name: "unknown root", doc: `<a:thing xmlns:a="urn:a"/>`, want: []string{"error: not a feature collection"}},
		{name: "mismatched end tag", doc: head + `<wfs:member><a:f><a:n>1</a:m></a:f></wfs:member></wfs:FeatureCollection>`, want: []string{"error: malformed XML"}},
		{name: "default namespace for the feature", doc: `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml" xmlns="urn:app"><gml:featureMember><f fid="1"><g><gml:Point><gml:coordinates>1,2</gml:coordinates></gml:Point></g></f></gml:featureMember></wfs:FeatureCollection>`,
			want: []string{"POINT(1 2)"}},
		{name: "unsupported encoding", doc: `<?xml version="1.0" encoding="EBCDIC"?>` + head + `</wfs:FeatureCollection>`, want: []string{"error: unsupported XML encoding"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.doc), tt.opts)
			var got []string
			for range 100 {
				f, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					got = append(got, "error: "+err.Error())
					var fe *spatial.FeatureError
					if errors.As(err, &fe) {
						continue
					}
					break
				}
				if f.Geometry == nil {
					got = append(got, "nil")
				} else {
					got = append(got, wkt.MarshalString(f.Geometry))
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if w, ok := strings.CutPrefix(tt.want[i], "error: "); ok {
					if !strings.Contains(got[i], w) {
						t.Errorf("result %d = %q, want an error containing %q", i, got[i], w)
					}
				} else if got[i] != tt.want[i] {
					t.Errorf("result %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestCurveIsFeatureError(t *testing.T) {
	doc, err := os.ReadFile("testdata/forms-gml32.xml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(doc), Options{})
	_, err = r.Next()
	var fe *spatial.FeatureError
	if !errors.As(err, &fe) || fe.ID != "arc" || fe.Index != 0 || !errors.Is(err, spatial.ErrCurve) || !strings.Contains(err.Error(), "gml:Arc") {
		t.Fatalf("first Next = %v, want a FeatureError for arc wrapping ErrCurve", err)
	}
	f, err := r.Next()
	if err != nil || f.ID != "after-arc" || f.Geometry != (orb.Point{10, 20}) {
		t.Fatalf("second Next = %+v, %v; want feature after-arc", f, err)
	}
}

// TestTruncated cuts every complete fixture at many offsets: each cut must
// end in an error matching io.ErrUnexpectedEOF, never in io.EOF.
func TestTruncated(t *testing.T) {
	for _, path := range fixtures(t) {
		name := filepath.Base(path)
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(name, ".xml") || !strings.Contains(string(doc), "FeatureCollection>") {
			continue
		}
		end := bytes.LastIndex(doc, []byte("FeatureCollection>")) + len("FeatureCollection>")
		t.Run(name, func(t *testing.T) {
			step := max(1, end/400)
			for cut := 0; cut < end; cut += step {
				err := readAll(NewReader(bytes.NewReader(doc[:cut]), Options{WFSVersion: versionFor(name)}))
				var rep *spatial.ExceptionReport
				if errors.As(err, &rep) && strings.Contains(name, "truncated-response") {
					continue // the server's own exception came before the cut
				}
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("cut at %d of %d: got %v, want an error matching io.ErrUnexpectedEOF", cut, len(doc), err)
				}
			}
		})
	}
}

// readAll reads to the first error that is not a FeatureError.
func readAll(r spatial.Reader) error {
	for {
		_, err := r.Next()
		var fe *spatial.FeatureError
		if err != nil && !errors.As(err, &fe) {
			return err
		}
	}
}

// TestStreamingMemoryFlat reads a generated 200,000-feature response (about
// 200 MB) from a reader that writes it on the fly, and checks that the live
// heap does not grow with it.
func TestStreamingMemoryFlat(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	r := NewReader(newGen(n), Options{WFSVersion: "2.0.0"})
	var before, after runtime.MemStats
	count := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
		if count == 1000 {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		if count == 1 {
			p := f.Geometry.(orb.Polygon)
			if p[0][0] != (orb.Point{5, 50}) {
				t.Fatalf("first vertex %v, want lon/lat [5 50]", p[0][0])
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if count != n {
		t.Fatalf("read %d features, want %d", count, n)
	}
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap after 1000 features %d KB, after %d: %d KB", before.HeapAlloc>>10, n, after.HeapAlloc>>10)
	if growth > 16<<20 {
		t.Errorf("heap grew by %d MB reading %d features: not streaming", growth>>20, n)
	}
}
