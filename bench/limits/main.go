// Command limits feeds the feature readers the hostile responses of issue 12 (an
// unterminated string, runaway nesting, a ten-million-vertex polygon, ten million
// properties) and reports the peak heap and what each reader said, with the default
// limits. Run: make bench-limits (or go run ./bench/limits [attack...]).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/spatial/gml"
)

// gen yields each part its number of times.
type gen struct {
	parts []string
	reps  []int
	i     int
	off   int
}

func (g *gen) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if g.i >= len(g.parts) {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		if g.reps[g.i] == 0 {
			g.i++
			g.off = 0
			continue
		}
		s := g.parts[g.i]
		c := copy(p[n:], s[g.off:])
		n += c
		g.off += c
		if g.off == len(s) {
			g.off = 0
			g.reps[g.i]--
		}
	}
	return n, nil
}

func G(parts ...any) *gen {
	g := &gen{}
	for i := 0; i < len(parts); i += 2 {
		g.parts = append(g.parts, parts[i].(string))
		g.reps = append(g.reps, parts[i+1].(int))
	}
	return g
}

const wfsHead = `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:app="http://a"><wfs:member><app:f gml:id="f.1">`

var attacks = []string{"json-string", "json-nest", "json-vertices", "gml-text", "gml-nest", "gml-vertices", "gml-props"}

func main() {
	names := os.Args[1:]
	if len(names) == 0 {
		names = attacks
	}
	fmt.Println("| response | features | peak heap | time | reader's answer |")
	fmt.Println("|---|---|---|---|---|")
	for _, n := range names {
		run(n)
		runtime.GC()
	}
}

func run(name string) {
	var r spatial.Reader
	switch name {
	case "json-string": // unterminated string, 2 GB
		r = geojson.NewReader(G(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":"`, 1, strings.Repeat("x", 1<<16), 1<<15), geojson.Options{})
	case "gml-nest": // 30 MB of nested elements
		r = gml.NewReader(G(wfsHead+`<app:p>`, 1, `<app:a>`, 30<<20/7), gml.Options{})
	case "gml-vertices": // 10M-vertex polygon
		r = gml.NewReader(G(wfsHead+`<app:geom><gml:Polygon srsName="urn:ogc:def:crs:EPSG::3857"><gml:exterior><gml:LinearRing><gml:posList>`, 1, `1234567.123 7654321.123 `, 10_000_000, `1 1</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon></app:geom></app:f></wfs:member></wfs:FeatureCollection>`, 1), gml.Options{})
	case "json-vertices":
		r = geojson.NewReader(G(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[`, 1, `[1234567.123,7654321.123],`, 10_000_000, `[1,1]]}}]}`, 1), geojson.Options{})
	case "gml-props": // 10M small properties
		r = gml.NewReader(G(wfsHead, 1, `<app:p>v</app:p>`, 10_000_000, `</app:f></wfs:member></wfs:FeatureCollection>`, 1), gml.Options{})
	case "gml-text": // one 2 GB text property
		r = gml.NewReader(G(wfsHead+`<app:p>`, 1, strings.Repeat("x", 1<<16), 1<<15, `</app:p></app:f></wfs:member></wfs:FeatureCollection>`, 1), gml.Options{})
	case "json-nest":
		r = geojson.NewReader(G(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":`, 1, `[`, 30<<20), geojson.Options{})
	default:
		fmt.Fprintf(os.Stderr, "unknown attack %q (one of %v)\n", name, attacks)
		os.Exit(2)
	}
	var peak uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak {
				peak = m.HeapInuse
			}
		}
	}()
	t0 := time.Now()
	n := 0
	var err error
	for {
		_, err = r.Next()
		if err != nil {
			break
		}
		n++
	}
	close(done)
	s := fmt.Sprint(err)
	if len(s) > 110 {
		s = s[:110] + "..."
	}
	fmt.Printf("| %s | %d | %d MB | %.1f s | %s |\n", name, n, peak>>20, time.Since(t0).Seconds(), s)
}
