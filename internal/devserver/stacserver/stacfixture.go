// Package stacfixture is a STAC API for tests: a landing page with its conformance
// classes, /collections with each collection's extent and item_assets, items by
// GET /collections/{id}/items (api.go), item search by POST /search with paging
// the way the STAC API specification describes it (a "next" link that is itself a POST,
// carrying the body to send, with a token), and assets served the way object stores serve
// them: ETag, Last-Modified, Accept-Ranges, 206 Partial Content for Range requests and
// If-Range (http.ServeContent). Switches make it misbehave: an asset whose item carries a
// wrong file:checksum, and a transfer cut off mid-file (the connection closes after n
// bytes of a declared length), the way a proxy timeout or a dropped link cuts a large
// download. Every Range header received is recorded.
package stacserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"
)

// Options configure a Server. Zero values mean the defaults noted.
type Options struct {
	// Items is the number of scenes. Defaults to 12.
	Items int
	// Extent is the lon/lat area the scenes tile. Defaults to 11.45..11.55E,
	// 48.05..48.15N.
	Extent orb.Bound
	// Collection names the scenes' collection. Defaults to "aerial".
	Collection string
	// AssetSize is the size of each visual asset in bytes. Defaults to 200,000.
	AssetSize int
	// MaxLimit caps a search's limit, as servers do. Defaults to 5.
	MaxLimit int
	// BadChecksum is the id of an item whose visual asset's file:checksum is wrong.
	BadChecksum string
}

// Stats counts what the server saw.
type Stats struct {
	Searches, AssetRequests int64
	AssetBytes              int64 // asset bytes written, cut transfers included
	// Ranges lists the Range header of every asset request ("" for none), per path.
	Ranges map[string][]string
}

// Server is a STAC API; it implements http.Handler and is safe for concurrent use.
type Server struct {
	o     Options
	items []item

	mu  sync.Mutex
	st  Stats
	cut map[string]int // path -> bytes after which the next transfer stops
}

type item struct {
	id       string
	bound    orb.Bound
	when     time.Time
	content  []byte
	checksum string
}

// New returns a Server.
func New(o Options) *Server {
	if o.Items == 0 {
		o.Items = 12
	}
	if o.Extent == (orb.Bound{}) {
		o.Extent = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}
	}
	if o.Collection == "" {
		o.Collection = "aerial"
	}
	if o.AssetSize == 0 {
		o.AssetSize = 200_000
	}
	if o.MaxLimit == 0 {
		o.MaxLimit = 5
	}
	s := &Server{o: o, st: Stats{Ranges: map[string][]string{}}, cut: map[string]int{}}
	cols := 4
	rows := (o.Items + cols - 1) / cols
	w := (o.Extent.Max[0] - o.Extent.Min[0]) / float64(cols)
	h := (o.Extent.Max[1] - o.Extent.Min[1]) / float64(rows)
	for i := range o.Items {
		r, c := i/cols, i%cols
		b := orb.Bound{Min: orb.Point{o.Extent.Min[0] + float64(c)*w, o.Extent.Min[1] + float64(r)*h}}
		b.Max = orb.Point{b.Min[0] + w, b.Min[1] + h}
		content := make([]byte, o.AssetSize)
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		for j := range content {
			content[j] = byte(rng.Uint32())
		}
		copy(content, "II*\x00") // a TIFF header, for the look of it
		sum := sha256.Sum256(content)
		it := item{id: fmt.Sprintf("scene-%03d", i), bound: b, when: time.Date(2024, 5, 1+i%28, 10, 0, 0, 0, time.UTC),
			content: content, checksum: "1220" + hex.EncodeToString(sum[:])}
		if it.id == o.BadChecksum {
			bad := sha256.Sum256([]byte("something else"))
			it.checksum = "1220" + hex.EncodeToString(bad[:])
		}
		s.items = append(s.items, it)
	}
	return s
}

// ItemIDs returns every item id in order.
func (s *Server) ItemIDs() []string {
	out := make([]string, len(s.items))
	for i, it := range s.items {
		out[i] = it.id
	}
	return out
}

// Content returns the bytes of an item's visual asset.
func (s *Server) Content(id string) []byte {
	for _, it := range s.items {
		if it.id == id {
			return it.content
		}
	}
	return nil
}

// AssetPath is the URL path of an item's visual asset.
func AssetPath(id string) string { return "/assets/" + id + "/visual.tif" }

// CutNext makes the next request of an item's visual asset stop after n bytes of its
// body (of the whole file for a 200, of the rest for a 206).
func (s *Server) CutNext(id string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut[AssetPath(id)] = n
}

// Stats returns a copy of the counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Ranges = map[string][]string{}
	for k, v := range s.st.Ranges {
		st.Ranges[k] = append([]string(nil), v...)
	}
	return st
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/search" && r.Method == http.MethodPost:
		s.search(w, r)
	case strings.HasPrefix(r.URL.Path, "/assets/") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.asset(w, r)
	case r.Method == http.MethodGet && s.api(w, r):
	case r.URL.Path == "/search":
		w.Header().Set("Allow", "POST")
		http.Error(w, `{"code":"MethodNotAllowed"}`, http.StatusMethodNotAllowed)
	default:
		http.Error(w, `{"code":"NotFound","description":"no such resource"}`, http.StatusNotFound)
	}
}

type searchBody struct {
	BBox        []float64      `json:"bbox"`
	Collections []string       `json:"collections,omitempty"`
	Datetime    string         `json:"datetime,omitempty"`
	Limit       int            `json:"limit,omitempty"`
	Query       map[string]any `json:"query,omitempty"`
	Token       string         `json:"token,omitempty"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.st.Searches++
	s.mu.Unlock()
	var q searchBody
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"code":"BadRequest","description":%q}`, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/geo+json")
	_ = json.NewEncoder(w).Encode(s.results(q, "http://"+r.Host, func(next searchBody) map[string]any {
		return map[string]any{"rel": "next", "href": "http://" + r.Host + "/search", "method": "POST", "body": next, "merge": false,
			"type": "application/geo+json"}
	}))
}

// results is the page of items q asks for, with a next link made by next when more follow.
func (s *Server) results(q searchBody, base string, next func(searchBody) map[string]any) map[string]any {
	area := s.o.Extent
	if len(q.BBox) == 4 {
		area = orb.Bound{Min: orb.Point{q.BBox[0], q.BBox[1]}, Max: orb.Point{q.BBox[2], q.BBox[3]}}
	}
	wantColl := len(q.Collections) == 0
	for _, c := range q.Collections {
		wantColl = wantColl || c == s.o.Collection
	}
	var match []item
	if wantColl {
		for _, it := range s.items {
			if it.bound.Intersects(area) {
				match = append(match, it)
			}
		}
	}
	limit := q.Limit
	if limit <= 0 || limit > s.o.MaxLimit {
		limit = s.o.MaxLimit
	}
	off := 0
	if t, ok := strings.CutPrefix(q.Token, "next:"); ok {
		off, _ = strconv.Atoi(t)
	}
	off = min(max(off, 0), len(match))
	end := min(off+limit, len(match))
	var feats []map[string]any
	for _, it := range match[off:end] {
		b := it.bound
		feats = append(feats, map[string]any{
			"type": "Feature", "stac_version": "1.0.0", "id": it.id, "collection": s.o.Collection,
			"geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{
				{b.Min[0], b.Min[1]}, {b.Max[0], b.Min[1]}, {b.Max[0], b.Max[1]}, {b.Min[0], b.Max[1]}, {b.Min[0], b.Min[1]}}}},
			"bbox":       []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]},
			"properties": map[string]any{"datetime": it.when.Format(time.RFC3339), "gsd": 0.2, "platform": "fixture-plane"},
			"assets": map[string]any{
				"visual": map[string]any{"href": base + AssetPath(it.id), "type": "image/tiff; application=geotiff; profile=cloud-optimized",
					"roles": []string{"visual"}, "file:checksum": it.checksum, "file:size": len(it.content)},
				"thumbnail": map[string]any{"href": base + "/assets/" + it.id + "/thumb.png", "type": "image/png", "roles": []string{"thumbnail"}},
			},
			"links": []any{},
		})
	}
	links := []map[string]any{{"rel": "self", "href": base + "/search", "method": "POST"}}
	if end < len(match) {
		nq := q
		nq.Token = "next:" + strconv.Itoa(end)
		links = append(links, next(nq))
	}
	out := map[string]any{"type": "FeatureCollection", "features": feats, "links": links,
		"numberMatched": len(match), "numberReturned": end - off}
	if feats == nil {
		out["features"] = []any{}
	}
	return out
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/assets/"), "/")
	var it *item
	for i := range s.items {
		if len(parts) == 2 && s.items[i].id == parts[0] {
			it = &s.items[i]
		}
	}
	if it == nil || parts[1] != "visual.tif" {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.st.AssetRequests++
	s.st.Ranges[r.URL.Path] = append(s.st.Ranges[r.URL.Path], r.Header.Get("Range"))
	cut, cutting := s.cut[r.URL.Path]
	delete(s.cut, r.URL.Path)
	s.mu.Unlock()
	sum := sha256.Sum256(it.content)
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	w.Header().Set("Content-Type", "image/tiff")
	cw := &countingWriter{ResponseWriter: w, s: s, limit: -1}
	if cutting {
		cw.limit = cut
	}
	http.ServeContent(cw, r, "visual.tif", it.when, bytes.NewReader(it.content))
}

// countingWriter counts body bytes and, with a limit, aborts the response after that
// many, so the client sees a body shorter than its Content-Length.
type countingWriter struct {
	http.ResponseWriter
	s     *Server
	n     int
	limit int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.limit >= 0 && c.n+len(p) > c.limit {
		p = p[:c.limit-c.n]
		n, _ := c.ResponseWriter.Write(p)
		c.add(n)
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	n, err := c.ResponseWriter.Write(p)
	c.add(n)
	return n, err
}

func (c *countingWriter) add(n int) {
	c.n += n
	c.s.mu.Lock()
	c.s.st.AssetBytes += int64(n)
	c.s.mu.Unlock()
}
