package geojson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/spatial"
)

// chunkReader hands out at most n bytes a Read, so that values straddle
// the refills of the Reader's window.
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
// feature errors, exception reports and not-features errors, the class of
// the others.
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
		return "truncated"
	}
	return "malformed"
}

// diff reads doc with the Reader and the reference reader and reports the
// first difference.
func diff(doc []byte, swap bool, chunk int) error {
	r := NewReader(&chunkReader{b: doc, n: max(1, chunk)}, Options{SwapXY: swap})
	ref := newRefReader(bytes.NewReader(doc), Options{SwapXY: swap})
	for i := 0; i <= len(doc)+10; i++ {
		f, err := r.Next()
		rf, rerr := ref.Next()
		if got, want := errClass(err), errClass(rerr); got != want {
			return fmt.Errorf("result %d: error %s (%v), reference %s (%v)", i, got, err, want, rerr)
		}
		if !reflect.DeepEqual(f, rf) {
			return fmt.Errorf("result %d: feature\n%#v\nreference\n%#v", i, f, rf)
		}
		var fe *spatial.FeatureError
		if err != nil && !errors.As(err, &fe) {
			if m, rm := r.Meta(), ref.Meta(); m != rm {
				return fmt.Errorf("meta %+v, reference %+v", m, rm)
			}
			return nil
		}
	}
	return errors.New("no final result")
}

func diffSeeds(t testing.TB) [][]byte {
	var docs [][]byte
	paths, _ := filepath.Glob("testdata/*.json")
	for _, p := range paths {
		doc, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	gen, _ := io.ReadAll(&genReader{n: 2})
	docs = append(docs, gen)
	for _, s := range []string{
		`{"type":"FeatureCollection","features":[{"geometry":{"type":"GeometryCollection","geometries":[{"type":"GeometryCollection","geometries":[]}]}}]}`,
		`{"features":[{"GEOMETRY":{"coordinates":[[1,2],[3,4]],"Type":"LineString"},"propertieſ":{"a":1},"ID":7}]}`,
		`{"features":[{"geometry":{"type":"Point","coordinates":[1,2],"type":"LineString"}},{"properties":{"a":1},"properties":{"b":[true,null,{"c":"\ud83d\ude00\ud800x\u00e9"}]}}]}`,
		`{"features":[{"id":{"a": [1, 2]},"properties":{"n":1e999}},{"type":5,"properties":"x"},"str",12,null,[1],{"geometry":5}]}`,
		`{"features":[{"geometry":{"type":"MultiPolygon","coordinates":[[[[1,2],[3,4]],[]],[]]}},{"geometry":{"type":"MultiLineString","coordinates":[[],[[1,2,3],[4,5,6]]]}}]}`,
		`{"features":[{"geometry":{"type":"Polygon","coordinates":[[[1,"2"]]]}},{"geometry":{"type":"MultiPoint","coordinates":[]}},{"geometry":{"type":"Point"}},{"geometry":{"type":"Point","coordinates":null}}]}`,
		`{"type":"Feature","id":12.50,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":1},"properties":{"b":2}}`,
		`{"numberMatched":1e999,"features":[]}`,
		`{"links":[{"rel":"next","href":"a"},{"REL":"next","HREF":"b"}],"features":[],"crs":{"properties":{"name":"EPSG:4326"}}}`,
		`{"code":"X","description":"bad","error":{"code":1,"message":"m","details":["d",2]}}`,
		`{"features":{"a":[1e999]}}`,
		`{"features":[{"properties":{"a":"x","b":"y","a":1,"b":"z","c":"","a":"w"},"properties":{"c":"v","d":"u","b":2}},{"properties":{"a":"x","b":"z","c":"","a":"w"}}]}`,
		"\xef\xbb\xbf {\"features\":[{\"properties\":{\"\\u00e9\xff\":\"\xed\xa0\x80\"}}]}",
	} {
		docs = append(docs, []byte(s))
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, s := range []string{
		`{"features":[{"properties":{"a":` + deep(9998) + `}}]}`,
		`{"features":[{"properties":{"a":` + deep(9999) + `}}]}`,
		`{"features":[{"geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[[[[[[1]]]]]]}]}}]}`,
		`{"links":` + deep(10000) + `,"features":[]}`,
		`{"links":` + deep(10001) + `,"features":[]}`,
		`{"features":{"a":` + deep(10001) + `}}`,
		"{\"features\":[{\"\u212aey\":1,\"geometr\u0131\":null,\"GEOMETRY\":{\"type\":\"Point\",\"coordinates\":[1,2]},\"propertie\u017f\":{\"\u017f\":1}}]}",
	} {
		docs = append(docs, []byte(s))
	}
	// The same documents with white space everywhere.
	for _, doc := range docs[:len(docs)-7] {
		var b bytes.Buffer
		if json.Indent(&b, doc, "", " \t\r\n") == nil {
			docs = append(docs, b.Bytes())
		}
	}
	return docs
}

func TestDifferential(t *testing.T) {
	docs := diffSeeds(t)
	fixture, _ := wfsFixtureDoc(t, 300)
	docs = append(docs, fixture)
	for i, doc := range docs {
		chunks := []int{1, 7, 4096, 1 << 20}
		switch {
		case testing.Short():
			chunks = chunks[1:2]
		case len(doc) > 4096:
			chunks = chunks[1:]
		}
		for _, chunk := range chunks {
			cuts := 97
			if len(doc) > 8192 {
				cuts = 13
			}
			for cut := 0; cut <= len(doc); cut += max(1, len(doc)/cuts) {
				if err := diff(doc[:cut], chunk%2 == 1, chunk); err != nil {
					t.Fatalf("doc %d cut at %d, chunk %d: %v\n%q", i, cut, chunk, err, doc[:cut])
				}
			}
			if err := diff(doc, false, chunk); err != nil {
				t.Fatalf("doc %d, chunk %d: %v\n%q", i, chunk, err, doc)
			}
		}
	}
}

// FuzzDifferential checks that the Reader and the encoding/json based
// reference reader yield the same features, errors and Meta.
func FuzzDifferential(f *testing.F) {
	for _, doc := range diffSeeds(f) {
		f.Add(doc, false, uint8(0))
		f.Add(doc, true, uint8(3))
	}
	f.Fuzz(func(t *testing.T, doc []byte, swap bool, chunk uint8) {
		n := int(chunk)
		if n == 0 {
			n = 1 << 20
		}
		if err := diff(doc, swap, n); err != nil {
			t.Fatalf("%v\ninput %q", err, doc)
		}
	})
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.5", "11.4507390", "-0.000001", "123456789012345", "1234567890123456", "1e5", "1e999", "0.1e-400", "-12.3456789e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc := bytesScanner([]byte(s))
		if len(s) == 0 || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
			return
		}
		num, err := sc.number()
		if err != nil || sc.pos != len(s) {
			return
		}
		got, ok := parseNumber(num)
		want, werr := strconv.ParseFloat(s, 64)
		if ok != (werr == nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseNumber(%q) = %v, %v; strconv: %v, %v", s, got, ok, want, werr)
		}
		for _, tail := range []string{"", ","} {
			sc := bytesScanner([]byte(s + tail))
			got, ok, _, err := sc.float()
			if err != nil || sc.pos != len(s) || ok != (werr == nil) || ok && math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("float(%q) = %v, %v, %v at %d; strconv: %v, %v", s+tail, got, ok, err, sc.pos, want, werr)
			}
		}
	})
}

// wfsFixtureDoc returns the GeoJSON GetFeature response of the fixture
// server for n parcels, as geoflow harvests it.
func wfsFixtureDoc(t testing.TB, n int) ([]byte, int) {
	t.Helper()
	srv := wfsserver.New(wfsserver.Options{Features: n, CountDefault: n, Seed: 1})
	req := httptest.NewRequest("GET", fmt.Sprintf("/wfs?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=%s&COUNT=%d&OUTPUTFORMAT=application/json", srv.TypeName(), n), nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("fixture answered %d: %s", rec.Code, rec.Body.Bytes())
	}
	return rec.Body.Bytes(), n
}

func benchmarkDoc(b *testing.B, doc []byte, want int, read func(io.Reader) spatial.Reader) {
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs, cpu := ms.Mallocs, cpuTime()
	for b.Loop() {
		r := read(bytes.NewReader(doc))
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != want {
			b.Fatalf("read %d features, want %d", n, want)
		}
	}
	cpu = cpuTime() - cpu
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*want), "ns/feature")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*want), "cpu-ns/feature")
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N*want), "allocs/feature")
}

// BenchmarkFixture reads 10,000 parcels as the fixture server writes them
// (17-vertex polygons, 10 properties), with the Reader (and with it reusing each
// feature's map and coordinates, as a store's harvest reads) and the reference.
func BenchmarkFixture(b *testing.B) {
	doc, n := wfsFixtureDoc(b, 10000)
	b.Run("reader", func(b *testing.B) {
		benchmarkDoc(b, doc, n, func(r io.Reader) spatial.Reader { return NewReader(r, Options{}) })
	})
	b.Run("reader-reuse", func(b *testing.B) {
		benchmarkDoc(b, doc, n, func(r io.Reader) spatial.Reader {
			rd := NewReader(r, Options{})
			rd.ReuseFeatures()
			return rd
		})
	})
	b.Run("reference", func(b *testing.B) {
		benchmarkDoc(b, doc, n, func(r io.Reader) spatial.Reader { return newRefReader(r, Options{}) })
	})
}
