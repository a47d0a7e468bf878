// Package bigserver is an OGC API - Features fixture whose collection holds a few very
// large features: each a line of millions of vertices, under every per-feature limit
// geoflow sets by default, in a quadrant of its own, so that a harvest with page_size 1
// fetches them as concurrent units. It measures and tests how much memory a harvest of
// such features takes. Bodies are generated as they are written (the fixture holds none
// of them), without a Content-Length, as servers that stream do.
package bigserver

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/paulmach/orb"
)

// Collection is the fixture's one collection.
const Collection = "big"

// Options configure a Server; zero values take the defaults.
type Options struct {
	// Features is how many features the collection holds, one per cell of a grid over
	// the extent 0,0 - 2,2. Defaults to 4.
	Features int
	// Vertices is each feature's vertex count. Defaults to 4,990,000, just under the
	// default limits.max_vertices (5,000,000); each feature is then about 110 MB of
	// GeoJSON, under limits.max_feature_bytes (128 MiB).
	Vertices int
}

// Server answers OGC API - Features requests; it implements http.Handler. Safe for
// concurrent use.
type Server struct {
	opts  Options
	boxes []orb.Bound
	// Items counts the items requests answered, and Bytes the bytes of features written.
	Items, Bytes atomic.Int64
}

// New returns a Server.
func New(opts Options) *Server {
	opts.Features = cmp.Or(opts.Features, 4)
	opts.Vertices = cmp.Or(opts.Vertices, 4_990_000)
	s := &Server{opts: opts}
	k := int(math.Ceil(math.Sqrt(float64(opts.Features))))
	cell := 2 / float64(k)
	for i := range opts.Features {
		cx, cy := (float64(i%k)+0.5)*cell, (float64(i/k)+0.5)*cell
		s.boxes = append(s.boxes, orb.Bound{Min: orb.Point{cx - 0.005, cy - 0.005}, Max: orb.Point{cx + 0.005, cy + 0.005}})
	}
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host
	coll := "/collections/" + Collection
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "":
		writeJSON(w, map[string]any{"title": "large features", "links": []map[string]string{
			{"rel": "conformance", "type": "application/json", "href": base + "/conformance"},
			{"rel": "data", "type": "application/json", "href": base + "/collections"},
		}})
	case "/conformance":
		writeJSON(w, map[string]any{"conformsTo": []string{
			"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
			"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
		}})
	case "/collections":
		writeJSON(w, map[string]any{"collections": []any{s.collection(base)}})
	case coll:
		writeJSON(w, s.collection(base))
	case coll + "/items":
		s.items(w, r)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"NotFound","description":"no such resource"}`)
	}
}

func (s *Server) collection(base string) map[string]any {
	return map[string]any{
		"id": Collection, "title": "large features",
		"extent": map[string]any{"spatial": map[string]any{"bbox": [][]float64{{0, 0, 2, 2}}}},
		"links": []map[string]string{
			{"rel": "items", "type": "application/geo+json", "href": base + "/collections/" + Collection + "/items"},
		},
	}
}

// items answers one page: the features whose box meets bbox, from offset, at most limit.
func (s *Server) items(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	area := orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}
	if b := q.Get("bbox"); b != "" {
		var v [4]float64
		parts := strings.Split(b, ",")
		if len(parts) != 4 {
			http.Error(w, "bad bbox", http.StatusBadRequest)
			return
		}
		for i, p := range parts {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil {
				http.Error(w, "bad bbox", http.StatusBadRequest)
				return
			}
			v[i] = f
		}
		area = orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}
	}
	limit, offset := 10, 0
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l >= 0 {
		limit = l
	}
	if o, err := strconv.Atoi(q.Get("offset")); err == nil && o >= 0 {
		offset = o
	}
	var match []int
	for i, b := range s.boxes {
		if b.Intersects(area) {
			match = append(match, i)
		}
	}
	page := match[min(offset, len(match)):]
	page = page[:min(limit, len(page))]
	s.Items.Add(1)
	w.Header().Set("Content-Type", "application/geo+json")
	bw := bufio.NewWriterSize(w, 64<<10)
	// A next link while features remain, as real servers write one: it is what tells
	// a client the server pages by offset.
	next := ""
	if end := min(offset, len(match)) + len(page); end < len(match) {
		nq := r.URL.Query()
		nq.Set("offset", strconv.Itoa(end))
		nq.Set("limit", strconv.Itoa(limit))
		next = fmt.Sprintf(`,"links":[{"rel":"next","type":"application/geo+json","href":%q}]`, "http://"+r.Host+r.URL.Path+"?"+nq.Encode())
	}
	fmt.Fprintf(bw, `{"type":"FeatureCollection","numberMatched":%d,"numberReturned":%d%s,"features":[`, len(match), len(page), next)
	for k, i := range page {
		if k > 0 {
			bw.WriteByte(',')
		}
		s.Bytes.Add(s.feature(bw, i))
	}
	bw.WriteString("]}")
	_ = bw.Flush() // a client that went away
}

// feature writes feature i and returns its size in bytes: a zigzag line across its box.
func (s *Server) feature(bw *bufio.Writer, i int) int64 {
	b := s.boxes[i]
	n := int64(0)
	head := fmt.Sprintf(`{"type":"Feature","id":"big-%d","properties":{"n":%d,"name":"feature %d"},"geometry":{"type":"LineString","coordinates":[`, i, i, i)
	bw.WriteString(head)
	n += int64(len(head))
	buf := make([]byte, 0, 64)
	dx := (b.Max[0] - b.Min[0]) / float64(s.opts.Vertices)
	for j := range s.opts.Vertices {
		buf = buf[:0]
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = strconv.AppendFloat(buf, b.Min[0]+float64(j)*dx, 'f', 7, 64)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, b.Min[1]+float64(j%2)*(b.Max[1]-b.Min[1]), 'f', 7, 64)
		buf = append(buf, ']')
		bw.Write(buf)
		n += int64(len(buf))
	}
	bw.WriteString("]}}")
	return n + 3
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
