package geojson

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

func dump(r *Reader) string {
	var b strings.Builder
	for range 1000 {
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
			fmt.Fprintf(&b, "  %s: %T %s\n", k, f.Properties[k], v)
		}
	}
	m := r.Meta()
	fmt.Fprintf(&b, "meta: matched=%d returned=%d next=%q srs=%q\n", m.NumberMatched, m.NumberReturned, m.Next, m.SRSName)
	return b.String()
}

func fixtures(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, pat := range []string{"*.json", "*.xml", "*.html"} {
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
			got := dump(NewReader(bytes.NewReader(doc), Options{}))
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
		name string
		doc  string
		want func(error) bool
	}{
		{name: "GeoServer JSON exceptions", doc: "exception-geoserver.json", want: func(err error) bool {
			var rep *spatial.ExceptionReport
			return errors.As(err, &rep) && rep.Code == "InvalidParameterValue" && rep.Locator == "typeNames"
		}},
		{name: "ArcGIS error object", doc: "exception-arcgis.json", want: func(err error) bool {
			var rep *spatial.ExceptionReport
			return errors.As(err, &rep) && rep.Code == "400" && rep.Text == "Unable to complete operation.; Invalid query parameters."
		}},
		{name: "OGC API exception", doc: "exception-ogcapi.json", want: func(err error) bool {
			var rep *spatial.ExceptionReport
			return errors.As(err, &rep) && rep.Code == "InvalidParameterValue"
		}},
		{name: "XML ows exception to a JSON request", doc: "exception-ows11.xml", want: func(err error) bool {
			var rep *spatial.ExceptionReport
			return errors.As(err, &rep) && rep.Code == "InvalidParameterValue"
		}},
		{name: "XML ServiceExceptionReport", doc: "exception-wfs10.xml", want: func(err error) bool {
			var rep *spatial.ExceptionReport
			return errors.As(err, &rep) && rep.Locator == "typename"
		}},
		{name: "HTML page", doc: "proxy-502.html", want: func(err error) bool {
			var nf *spatial.NotFeaturesError
			return errors.As(err, &nf) && nf.Kind == "html"
		}},
		{name: "other JSON object", doc: "other-object.json", want: func(err error) bool {
			var nf *spatial.NotFeaturesError
			return errors.As(err, &nf) && nf.Kind == "json"
		}},
		{name: "JSON array", doc: "array.json", want: func(err error) bool {
			var nf *spatial.NotFeaturesError
			return errors.As(err, &nf) && nf.Kind == "json"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join("testdata", tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(doc), Options{})
			err = readAll(r)
			if !tt.want(err) {
				t.Errorf("got %T %v", err, err)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("Next after a final error = %v, want the same error", again)
			}
		})
	}
}

func TestSwapOption(t *testing.T) {
	doc := `{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[50.7,7.1]},"properties":{}}]}`
	f, err := NewReader(strings.NewReader(doc), Options{SwapXY: true}).Next()
	if err != nil {
		t.Fatal(err)
	}
	if f.Geometry != (orb.Point{7.1, 50.7}) {
		t.Errorf("geometry %v, want [7.1 50.7]", f.Geometry)
	}
}

// TestTruncated cuts every complete collection at many offsets: each cut
// must end in an error matching io.ErrUnexpectedEOF.
func TestTruncated(t *testing.T) {
	for _, path := range fixtures(t) {
		name := filepath.Base(path)
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		end := bytes.LastIndexByte(doc, '}')
		if end < 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			for cut := 0; cut <= end; cut += max(1, end/300) {
				err := readAll(NewReader(bytes.NewReader(doc[:cut]), Options{}))
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("cut at %d of %d (%q): got %v, want an error matching io.ErrUnexpectedEOF", cut, len(doc), doc[max(0, cut-20):cut], err)
				}
			}
		})
	}
}

func readAll(r spatial.Reader) error {
	for {
		_, err := r.Next()
		var fe *spatial.FeatureError
		if err != nil && !errors.As(err, &fe) {
			return err
		}
	}
}

// genReader writes a GeoJSON collection of n polygon features on the fly,
// with the counts after "features" as GeoServer writes them.
type genReader struct {
	n, i  int
	buf   bytes.Buffer
	state int
}

func (g *genReader) Read(p []byte) (int, error) {
	for g.buf.Len() < len(p) && g.state < 3 {
		switch g.state {
		case 0:
			g.buf.WriteString(`{"type":"FeatureCollection","features":[`)
			g.state = 1
		case 1:
			if g.i == g.n {
				g.state = 2
				continue
			}
			if g.i > 0 {
				g.buf.WriteByte(',')
			}
			lon, lat := 5+float64(g.i/1000)*0.001, 50+float64(g.i%1000)*0.001
			fmt.Fprintf(&g.buf, `{"type":"Feature","id":"parcels.%d","geometry":{"type":"Polygon","coordinates":[[`, g.i)
			for k := range 16 {
				fmt.Fprintf(&g.buf, "[%.7f,%.7f],", lon+float64(k/4)*0.0001, lat+float64(k%4)*0.0001)
			}
			fmt.Fprintf(&g.buf, `[%.7f,%.7f]]]},"geometry_name":"geom","properties":{"parcel_id":"P-%07d","name":"Parcel number %d","area_m2":%d.25,"owner_type":"municipal","zoning":"R-%d","updated":"2023-11-01T12:00:00Z","valid":true,"remarks":null}}`,
				lon, lat, g.i, g.i, 100+g.i%5000, g.i%7)
			g.i++
		case 2:
			fmt.Fprintf(&g.buf, `],"totalFeatures":%d,"numberMatched":%d,"numberReturned":%d,"timeStamp":"2024-05-01T10:00:00Z"}`, g.n, g.n, g.n)
			g.state = 3
		}
	}
	if g.buf.Len() == 0 {
		return 0, io.EOF
	}
	return g.buf.Read(p)
}

func TestStreamingMemoryFlat(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	r := NewReader(&genReader{n: n}, Options{})
	var before, after runtime.MemStats
	count := 0
	for {
		_, err := r.Next()
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
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if count != n {
		t.Fatalf("read %d features, want %d", count, n)
	}
	if m := r.Meta(); m.NumberMatched != int64(n) || m.NumberReturned != int64(n) {
		t.Errorf("meta %+v, want counts %d read after the features", m, n)
	}
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap after 1000 features %d KB, after %d: %d KB", before.HeapAlloc>>10, n, after.HeapAlloc>>10)
	if growth > 16<<20 {
		t.Errorf("heap grew by %d MB reading %d features: not streaming", growth>>20, n)
	}
}

func BenchmarkReader(b *testing.B) {
	doc, err := io.ReadAll(&genReader{n: 10000})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(doc), Options{})
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
		if n != 10000 {
			b.Fatalf("read %d features", n)
		}
	}
}
