package wfsserver

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// shuffleGroup is the span, in match positions, within which UnstableOrder
// moves rows. With 1,000-row pages it loses about 1.5% of a layer to offset
// paging (1.5-1.7% measured here), as a parallel-scan PostGIS did in the
// docs/field-notes.md.
const shuffleGroup = 68

// flushEvery is how many features are written between explicit flushes, so
// clients see a steady stream rather than one burst.
const flushEvery = 256

// order maps page positions to match positions.
type order struct {
	desc     bool
	unstable bool
	seed     uint64
	phase    int
	n        int
}

// group returns the shuffle group holding match position p.
func (o *order) group(p int) (start, size int) {
	if p < o.phase {
		return 0, min(o.phase, o.n)
	}
	k := (p - o.phase) / shuffleGroup
	start = o.phase + k*shuffleGroup
	return start, min(shuffleGroup, o.n-start)
}

// source returns the match position shown at page position p. Unstable order
// permutes each group with a per-request affine map, so rows drift only
// locally: most of a page is right, its edges are not.
func (o *order) source(p int) int {
	if o.desc {
		return o.n - 1 - p
	}
	if !o.unstable {
		return p
	}
	start, size := o.group(p)
	if size <= 1 {
		return p
	}
	h := mix(o.seed ^ uint64(start))
	a := 1 + int(h%uint64(size-1))
	for gcd(a, size) != 1 {
		a = a%(size-1) + 1
	}
	b := int((h >> 32) % uint64(size))
	return start + (a*(p-start)+b)%size
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// page returns the parcel indexes at page positions [lo, hi).
func (o *order) page(sel *selection, lo, hi int) []int {
	if hi <= lo {
		return nil
	}
	out := make([]int, 0, hi-lo)
	switch {
	case o.desc:
		win := sel.appendRange(nil, o.n-hi, o.n-lo)
		for k := len(win) - 1; k >= 0; k-- {
			out = append(out, win[k])
		}
	case o.unstable:
		wlo, _ := o.group(lo)
		s, n := o.group(hi - 1)
		win := sel.appendRange(nil, wlo, s+n)
		for p := lo; p < hi; p++ {
			out = append(out, win[o.source(p)-wlo])
		}
	default:
		out = sel.appendRange(out, lo, hi)
	}
	return out
}

// serveGetFeature answers GetFeature, streaming the page.
func (s *Server) serveGetFeature(w http.ResponseWriter, r *http.Request, q *query, fs *faultState) {
	if q.hits {
		s.hits.Add(1)
	} else {
		s.getFeature.Add(1)
	}
	s.recordBBox(q.bbox)
	kind, v := fs.draw()
	if s.serveFault(w, q.version, kind, v) {
		return
	}
	rev := s.state()
	if !q.hasIDs {
		rev = rev.listing() // a query by id sees what a listing hides
	}
	var sel *selection
	if q.bbox != nil {
		sel = s.grid.selectBound(*q.bbox, rev)
	} else {
		sel = s.grid.selectAll(rev)
	}
	if q.hasIDs {
		sel.restrict(q.ids)
	}
	total, reported := 0, 0
	if !rev.empty {
		total = sel.count()
		reported = total + s.opts.CountExtra
	}
	o := &order{desc: q.sorted && q.sortDesc, n: total}
	if s.opts.UnstableOrder && !q.sorted {
		o.unstable = true
		o.seed = mix(s.grid.seed ^ s.seq.Add(1)*0x9e3779b97f4a7c15)
		o.phase = int(o.seed>>40) % shuffleGroup
	}
	var ids []int
	if !q.hits {
		lo := min(q.startIndex, total)
		size := q.count
		if c := s.opts.PageCap; c > 0 {
			size = min(size, c)
		}
		ids = o.page(sel, lo, min(total, lo+size))
	}
	if rc := s.opts.RowCost; rc > 0 {
		read := total / 10
		if !q.hits {
			read = min(q.startIndex, total) + len(ids)
		}
		if !s.opts.Sleep(r.Context(), time.Duration(read)*rc) {
			return
		}
	}
	fw := &featureWriter{s: s, v: rev, q: q, total: reported, ids: ids, baseURL: s.baseURL(r), ctx: r.Context()}
	if ec := s.opts.EncodeCost; ec > 0 {
		fw.encodeCost = ec
		if q.format != fmtJSON {
			fw.encodeCost = 2 * ec
		}
	}
	if kind == faultTruncate {
		fw.truncateAt = int(v * float64(len(ids)+1))
		fw.truncate = true
	}
	if q.ogcapi {
		fw.next = s.ogcapiNext(r, q, total, len(ids))
	} else {
		fw.next, fw.previous = s.pageLinks(r, q, total, len(ids))
	}
	fw.write(w)
}

// pageLinks builds WFS 2.0 next and previous URLs for the flavor.
func (s *Server) pageLinks(r *http.Request, q *query, total, returned int) (next, previous string) {
	if q.version != "2.0.0" || (s.fl.nextNeedsStartIndex && !q.startGiven) || !q.countGiven && !q.startGiven {
		return "", ""
	}
	link := func(start int) string {
		v := url.Values{}
		for k, x := range r.URL.Query() {
			if !strings.EqualFold(k, "STARTINDEX") && !strings.EqualFold(k, "RESULTTYPE") {
				v[k] = x
			}
		}
		if r.Method == http.MethodPost {
			for k, x := range q.params {
				if k != "STARTINDEX" && k != "RESULTTYPE" && k != "FILTER" {
					v.Set(k, x)
				}
			}
			if q.bbox != nil {
				v.Set("BBOX", strconv.FormatFloat(q.bbox.Min[0], 'f', -1, 64)+","+strconv.FormatFloat(q.bbox.Min[1], 'f', -1, 64)+","+
					strconv.FormatFloat(q.bbox.Max[0], 'f', -1, 64)+","+strconv.FormatFloat(q.bbox.Max[1], 'f', -1, 64)+",EPSG:4326")
			}
		}
		v.Set("STARTINDEX", strconv.Itoa(start))
		return s.baseURL(r) + "?" + v.Encode()
	}
	if q.hits {
		if s.fl.nextOnHits && q.countGiven && total > 0 {
			return link(q.startIndex), ""
		}
		return "", ""
	}
	if q.startIndex+returned < total && returned > 0 {
		next = link(q.startIndex + returned)
	}
	if s.fl.previous && q.startIndex > 0 {
		previous = link(max(0, q.startIndex-q.count))
	}
	return next, previous
}

// featureWriter streams one GetFeature response.
type featureWriter struct {
	s          *Server
	v          *revision // the revision the whole response is written at
	q          *query
	total      int
	ids        []int
	baseURL    string
	next       string
	previous   string
	truncate   bool
	truncateAt int

	ctx        context.Context
	encodeCost time.Duration // per feature, slept every costEvery features

	w   *bufio.Writer
	rw  http.ResponseWriter
	b   []byte
	sh  shape
	gid []byte
}

func (fw *featureWriter) matchedText() (string, bool) {
	if !fw.q.hits && (fw.s.opts.SkipNumberMatched || fw.s.fl.numberMatchedUnknown) {
		return "unknown", false
	}
	return strconv.Itoa(fw.total), true
}

func (fw *featureWriter) write(rw http.ResponseWriter) {
	fw.rw = rw
	ct := map[outFormat]string{fmtGML32: "application/gml+xml; version=3.2", fmtGML311: "text/xml; subtype=gml/3.1.1",
		fmtGML2: "text/xml; subtype=gml/2.1.2", fmtJSON: "application/json"}[fw.q.format]
	rw.Header().Set("Content-Type", ct)
	rw.WriteHeader(http.StatusOK)
	fw.w = bufio.NewWriterSize(rw, 64<<10)
	fw.b = make([]byte, 0, 16<<10)
	if fw.q.format == fmtJSON {
		fw.writeJSON()
	} else {
		fw.writeGML()
	}
	_ = fw.w.Flush()
}

// emit hands the buffered bytes to the bufio.Writer.
func (fw *featureWriter) emit() {
	_, _ = fw.w.Write(fw.b)
	fw.b = fw.b[:0]
}

// costEvery is how many features the encoding cost is slept for at once: timers are too
// coarse to sleep per feature.
const costEvery = 50

// feature writes feature k of the page and handles flushing and truncation.
func (fw *featureWriter) afterFeature(k int) {
	fw.emit()
	fw.s.served.Add(1)
	if fw.encodeCost > 0 && (k+1)%costEvery == 0 {
		fw.s.opts.Sleep(fw.ctx, costEvery*fw.encodeCost)
	}
	if fw.truncate && k+1 >= fw.truncateAt {
		fw.abort()
	}
	if (k+1)%flushEvery == 0 {
		_ = fw.w.Flush()
		if f, ok := fw.rw.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// abort sends what was written, half a tag included, and drops the
// connection: the client sees a 200 whose body stops mid-document.
func (fw *featureWriter) abort() {
	fw.b = append(fw.b, "<gml:"...)
	fw.emit()
	_ = fw.w.Flush()
	if f, ok := fw.rw.(http.Flusher); ok {
		f.Flush()
	}
	fw.s.fTrunc.Add(1)
	fw.s.faultsAll.Add(1)
	panic(http.ErrAbortHandler)
}
