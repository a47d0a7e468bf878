// Package tilefixture is a map tile server for tests and benchmarks that behaves the way
// real ones do (OpenStreetMap's tile servers behind their CDN, MapProxy, GeoServer's
// GeoWebCache):
//
//   - every tile carries a strong ETag, Last-Modified and Cache-Control: max-age, and a
//     conditional request (If-None-Match, else If-Modified-Since) is answered 304 with no
//     body when the tile has not changed;
//   - tiles outside the coverage area or beyond the deepest zoom are 404 (MapProxy and
//     most CDNs), with a small text body;
//   - a request quota per fixed window is answered 429 Too Many Requests with Retry-After
//     in seconds, as OSM's tile CDN does to bulk downloaders;
//   - switches make it misbehave like a proxy or portal in front of the tile server: an
//     HTML error page answered with 200 (an nginx "502 Bad Gateway" page, or a portal's
//     "layer not found" page), and tiles that fail with 500 until healed.
//
// Tiles are tiny PNGs (or JPEGs) of one colour derived from z/x/y and the content
// version, generated deterministically with the standard library. URL forms:
// /{z}/{x}/{y}.png (XYZ), /tms/{z}/{x}/{y}.png (TMS rows from the south), WMTS KVP
// /wmts?SERVICE=WMTS&REQUEST=GetTile&TILEMATRIX={z}&TILEROW={y}&TILECOL={x} and WMTS REST
// /wmts/rest/basemap/{Style}/{TileMatrixSet}/{z}/{y}/{x}.png, with the capabilities of
// both at /wmts?SERVICE=WMTS&REQUEST=GetCapabilities and /wmts/1.0.0/WMTSCapabilities.xml
// (wmts.go).
package tileserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"
)

// Options configure a Server. The zero value serves PNG tiles of the whole world down to
// zoom 20, without quota or faults.
type Options struct {
	// Coverage is the lon/lat area with tiles; tiles that do not touch it are 404.
	// The zero value covers the world.
	Coverage orb.Bound
	// MaxZoom is the deepest level served; deeper tiles are 404. Defaults to 20.
	MaxZoom int
	// Format is "png" (default) or "jpeg".
	Format string
	// Size is the tile side in pixels. Defaults to 16, to keep tests and benchmarks
	// about the client rather than image encoding.
	Size int
	// Quota limits requests; nil means none.
	Quota *Quota
	// Latency delays every response.
	Latency time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Quota is a budget of requests per fixed window.
type Quota struct {
	Limit  int
	Window time.Duration // defaults to one second
	// Headers sends X-RateLimit-Limit, -Remaining and -Reset (seconds to the window's
	// end) with every answer, as API gateways do; without them the quota is known only
	// by its 429s, as at OSM's tile CDN.
	Headers bool
}

// HTML200 selects the HTML error page the server answers with 200.
type HTML200 int

// The pages.
const (
	HTMLOff    HTML200 = iota
	HTMLProxy          // an nginx "502 Bad Gateway" page: the server behind may recover
	HTMLPortal         // a portal's "layer not found" page: it will say the same next time
)

// Stats count what the server answered.
type Stats struct {
	Requests, OK, NotModified, NotFound, TooMany, HTML, Failed int64
	Bytes                                                      int64 // tile bytes sent with 200
	// Served counts 200s per tile key "z/x/y".
	Served map[string]int
}

// Server is a tile server; it implements http.Handler and is safe for concurrent use.
type Server struct {
	o Options

	mu        sync.Mutex
	st        Stats
	version   int
	html      HTML200
	htmlFor   func(z, x, y int) bool
	fail      func(z, x, y int) bool
	winStart  time.Time
	winCount  int
	tileCache map[[4]int][]byte
}

// New returns a Server.
func New(o Options) *Server {
	if o.MaxZoom == 0 {
		o.MaxZoom = 20
	}
	if o.Format == "" {
		o.Format = "png"
	}
	if o.Size == 0 {
		o.Size = 16
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Quota != nil && o.Quota.Window == 0 {
		q := *o.Quota
		q.Window = time.Second
		o.Quota = &q
	}
	return &Server{o: o, st: Stats{Served: map[string]int{}}, tileCache: map[[4]int][]byte{}}
}

// SetHTML200 makes the tiles for which match returns true (all tiles when match is nil)
// answer the given HTML page with 200; HTMLOff heals them.
func (s *Server) SetHTML200(page HTML200, match func(z, x, y int) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.html, s.htmlFor = page, match
}

// SetFail makes the tiles for which match returns true answer 500; nil heals them.
func (s *Server) SetFail(match func(z, x, y int) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = match
}

// Bump changes the content (and so the ETag and Last-Modified) of every tile.
func (s *Server) Bump() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
}

// Stats returns a copy of the counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Served = make(map[string]int, len(s.st.Served))
	for k, v := range s.st.Served {
		st.Served[k] = v
	}
	return st
}

// ResetStats zeroes the counts.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = Stats{Served: map[string]int{}}
}

// TileURL is the XYZ URL template of a server mounted at base.
func TileURL(base string) string { return base + "/{z}/{x}/{y}.png" }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.o.Latency > 0 {
		time.Sleep(s.o.Latency)
	}
	z, x, y, ok := parse(r)
	s.mu.Lock()
	s.st.Requests++
	if q := s.o.Quota; q != nil {
		now := s.o.Now()
		if now.Sub(s.winStart) >= q.Window {
			s.winStart, s.winCount = now.Truncate(q.Window), 0
		}
		s.winCount++
		if q.Headers {
			w.Header().Set("X-RateLimit-Limit", strconv.Itoa(q.Limit))
			w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(max(q.Limit-s.winCount, 0)))
			w.Header().Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(s.winStart.Add(q.Window).Sub(now).Seconds()))))
		}
		if s.winCount > q.Limit {
			s.st.TooMany++
			wait := s.winStart.Add(q.Window).Sub(now)
			s.mu.Unlock()
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintln(w, "Too Many Requests: bulk downloading is not permitted")
			return
		}
	}
	if isCapabilities(r) {
		s.mu.Unlock()
		s.capabilities(w, r)
		return
	}
	if !ok {
		s.st.NotFound++
		s.mu.Unlock()
		http.Error(w, "no such tile", http.StatusNotFound)
		return
	}
	if s.fail != nil && s.fail(z, x, y) {
		s.st.Failed++
		s.mu.Unlock()
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	if s.html != HTMLOff && (s.htmlFor == nil || s.htmlFor(z, x, y)) {
		page := s.html
		s.st.HTML++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if page == HTMLProxy {
			fmt.Fprint(w, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
		} else {
			fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Map portal</title></head><body><h1>Layer not found</h1><p>The requested layer does not exist or you are not signed in.</p></body></html>")
		}
		return
	}
	if z > s.o.MaxZoom || !s.covered(z, x, y) {
		s.st.NotFound++
		s.mu.Unlock()
		http.Error(w, "tile not found", http.StatusNotFound)
		return
	}
	version := s.version
	s.mu.Unlock()

	body := s.tile(z, x, y, version)
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	mod := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(version) * time.Hour)
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", mod.Format(http.TimeFormat))
	h.Set("Cache-Control", "max-age=86400")
	if notModified(r, etag, mod) {
		s.count(func(st *Stats) { st.NotModified++ })
		w.WriteHeader(http.StatusNotModified)
		return
	}
	ct := "image/png"
	if s.o.Format == "jpeg" {
		ct = "image/jpeg"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	s.count(func(st *Stats) {
		st.OK++
		st.Bytes += int64(len(body))
		st.Served[fmt.Sprintf("%d/%d/%d", z, x, y)]++
	})
	_, _ = w.Write(body)
}

func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
}

// notModified applies RFC 9110's precedence: If-None-Match when present, else
// If-Modified-Since.
func notModified(r *http.Request, etag string, mod time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == etag || t == "*" {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil && !mod.After(t) {
			return true
		}
	}
	return false
}

func (s *Server) covered(z, x, y int) bool {
	c := s.o.Coverage
	if c == (orb.Bound{}) {
		return true
	}
	return bound(z, x, y).Intersects(c)
}

// bound is the lon/lat footprint of tile z/x/y.
func bound(z, x, y int) orb.Bound {
	n := float64(uint64(1) << uint(z))
	lon := func(x float64) float64 { return 360*x/n - 180 }
	lat := func(y float64) float64 { return math.Atan(math.Sinh(math.Pi*(1-2*y/n))) * 180 / math.Pi }
	return orb.Bound{Min: orb.Point{lon(float64(x)), lat(float64(y + 1))}, Max: orb.Point{lon(float64(x + 1)), lat(float64(y))}}
}

// tile returns the encoded image of a tile, made once per content version.
func (s *Server) tile(z, x, y, version int) []byte {
	key := [4]int{z, x, y, version}
	s.mu.Lock()
	b, ok := s.tileCache[key]
	s.mu.Unlock()
	if ok {
		return b
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/%d/%d@%d", z, x, y, version)))
	img := image.NewNRGBA(image.Rect(0, 0, s.o.Size, s.o.Size))
	c := color.NRGBA{h[0], h[1], h[2], 255}
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	// A diagonal line, so tiles are not all trivially uniform.
	for i := 0; i < s.o.Size; i++ {
		img.Set(i, i, color.NRGBA{h[3], h[4], h[5], 255})
	}
	var buf bytes.Buffer
	if s.o.Format == "jpeg" {
		_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80})
	} else {
		_ = png.Encode(&buf, img)
	}
	b = buf.Bytes()
	s.mu.Lock()
	if len(s.tileCache) > 200_000 {
		clear(s.tileCache)
	}
	s.tileCache[key] = b
	s.mu.Unlock()
	return b
}

// parse reads the tile address from any of the URL forms, in XYZ numbering.
func parse(r *http.Request) (z, x, y int, ok bool) {
	if strings.HasSuffix(r.URL.Path, "/wmts") || strings.EqualFold(r.URL.Query().Get("SERVICE"), "WMTS") {
		q := map[string]string{}
		for k, v := range r.URL.Query() {
			q[strings.ToUpper(k)] = v[0]
		}
		if !strings.EqualFold(q["REQUEST"], "GetTile") {
			return 0, 0, 0, false
		}
		z, err1 := strconv.Atoi(q["TILEMATRIX"])
		x, err2 := strconv.Atoi(q["TILECOL"])
		y, err3 := strconv.Atoi(q["TILEROW"])
		return z, x, y, err1 == nil && err2 == nil && err3 == nil && valid(z, x, y)
	}
	p := strings.Trim(r.URL.Path, "/")
	if rest, cut := strings.CutPrefix(p, "wmts/rest/"); cut {
		return parseREST(rest)
	}
	tms := false
	if rest, cut := strings.CutPrefix(p, "tms/"); cut {
		p, tms = rest, true
	}
	parts := strings.Split(p, "/")
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	last := parts[2]
	if i := strings.IndexByte(last, '.'); i >= 0 {
		last = last[:i]
	}
	z, err1 := strconv.Atoi(parts[0])
	x, err2 := strconv.Atoi(parts[1])
	y, err3 := strconv.Atoi(last)
	if err1 != nil || err2 != nil || err3 != nil || z < 0 || z > 30 {
		return 0, 0, 0, false
	}
	if tms {
		y = (1<<uint(z) - 1) - y
	}
	return z, x, y, valid(z, x, y)
}

func valid(z, x, y int) bool {
	return z >= 0 && z <= 30 && x >= 0 && y >= 0 && x < 1<<uint(z) && y < 1<<uint(z)
}
