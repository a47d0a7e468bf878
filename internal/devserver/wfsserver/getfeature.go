package wfsserver

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// shuffleGroup is the span, in match positions, within which UnstableOrder
// moves rows. With 1,000-row pages it loses about 1.5% of a layer to offset
// paging (1.5-1.7% measured here), as a parallel-scan PostGIS did in the
// FIELD-NOTES.
const shuffleGroup = 68

// flushEvery is how many features are written between explicit flushes, so
// clients see a steady stream rather than one burst.
const flushEvery = 256

func appendInt(b []byte, i int) []byte { return strconv.AppendInt(b, int64(i), 10) }

// appendEscaped appends s with XML special characters escaped; invalid UTF-8
// becomes U+FFFD so the document stays well-formed.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '&':
				b = append(b, "&amp;"...)
			case '<':
				b = append(b, "&lt;"...)
			case '>':
				b = append(b, "&gt;"...)
			case '"':
				b = append(b, "&quot;"...)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, r)
		i += n
	}
	return b
}

func escapeString(s string) string { return string(appendEscaped(nil, s)) }

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

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
	var sel *selection
	if q.bbox != nil {
		sel = s.grid.selectBound(*q.bbox)
	} else {
		sel = s.grid.selectAll()
	}
	if q.hasIDs {
		sel.restrict(q.ids)
	}
	total := sel.count()
	o := &order{desc: q.sorted && q.sortDesc, n: total}
	if s.opts.UnstableOrder && !q.sorted {
		o.unstable = true
		o.seed = mix(s.grid.seed ^ s.seq.Add(1)*0x9e3779b97f4a7c15)
		o.phase = int(o.seed>>40) % shuffleGroup
	}
	var ids []int
	if !q.hits {
		lo := min(q.startIndex, total)
		ids = o.page(sel, lo, min(total, lo+q.count))
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
	fw := &featureWriter{s: s, q: q, total: total, ids: ids, baseURL: s.baseURL(r), ctx: r.Context()}
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
	fw.next, fw.previous = s.pageLinks(r, q, total, len(ids))
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

func (fw *featureWriter) schemaLocation(wfsNS, wfsXSD, gmlNS, gmlXSD string) []byte {
	s := fw.s
	dft := "?service=WFS&version=" + fw.q.version + "&request=DescribeFeatureType&typeName=" + s.TypeName()
	b := append(fw.b, ` xsi:schemaLocation="`...)
	b = append(b, s.ns...)
	b = append(b, ' ')
	b = appendEscaped(b, fw.baseURL+dft)
	b = append(b, ' ')
	b = append(b, wfsNS+" "+wfsXSD...)
	if gmlNS != "" {
		b = append(b, " "+gmlNS+" "+gmlXSD...)
	}
	return append(b, '"')
}

func (fw *featureWriter) writeGML() {
	s, q := fw.s, fw.q
	b := append(fw.b, xmlHeader...)
	ns := ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:` + s.prefix + `="` + s.ns + `"`
	stamp := s.opts.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	switch q.format {
	case fmtGML32:
		b = append(b, `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"`...)
		b = append(b, ns...)
		m, _ := fw.matchedText()
		b = append(b, ` numberMatched="`+m+`" numberReturned="`...)
		b = appendInt(b, len(fw.ids))
		b = append(b, `" timeStamp="`+stamp+`"`...)
		if fw.next != "" {
			b = append(b, ` next="`...)
			b = appendEscaped(b, fw.next)
			b = append(b, '"')
		}
		if fw.previous != "" {
			b = append(b, ` previous="`...)
			b = appendEscaped(b, fw.previous)
			b = append(b, '"')
		}
		fw.b = b
		b = fw.schemaLocation("http://www.opengis.net/wfs/2.0", "http://schemas.opengis.net/wfs/2.0/wfs.xsd",
			"http://www.opengis.net/gml/3.2", "http://schemas.opengis.net/gml/3.2.1/gml.xsd")
	case fmtGML311:
		b = append(b, `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml"`...)
		b = append(b, ns...)
		b = append(b, ` numberOfFeatures="`...)
		if q.hits {
			b = appendInt(b, fw.total)
		} else {
			b = appendInt(b, len(fw.ids))
		}
		b = append(b, `" timeStamp="`+stamp+`"`...)
		fw.b = b
		b = fw.schemaLocation("http://www.opengis.net/wfs", "http://schemas.opengis.net/wfs/1.1.0/wfs.xsd", "", "")
	default:
		b = append(b, `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml"`...)
		b = append(b, ns...)
		fw.b = b
		b = fw.schemaLocation("http://www.opengis.net/wfs", "http://schemas.opengis.net/wfs/1.0.0/WFS-basic.xsd", "", "")
	}
	if q.hits {
		fw.b = append(b, "/>\n"...)
		fw.emit()
		return
	}
	b = append(b, ">\n"...)
	if q.format == fmtGML2 {
		// GeoServer's GML2 collections bound themselves with gml:null rather
		// than computing an envelope before streaming.
		b = append(b, "<gml:boundedBy><gml:null>unknown</gml:null></gml:boundedBy>\n"...)
	}
	members := q.format == fmtGML311 && !s.fl.featureMemberEach && len(fw.ids) > 0
	if members {
		b = append(b, "<gml:featureMembers>\n"...)
	}
	fw.b = b
	fw.emit()
	for k, i := range fw.ids {
		fw.gmlFeature(i, !members)
		fw.afterFeature(k)
	}
	if members {
		fw.b = append(fw.b, "</gml:featureMembers>\n"...)
	}
	if fw.truncate {
		fw.abort()
	}
	fw.b = append(fw.b, "</wfs:FeatureCollection>\n"...)
	fw.emit()
}

func (fw *featureWriter) appendCoord(b []byte, p [2]float64, sep byte) []byte {
	x, y := p[0], p[1]
	if fw.q.srs.latLon {
		x, y = y, x
	}
	b = appendFixed7(b, x)
	b = append(b, sep)
	return appendFixed7(b, y)
}

// appendFixed7 formats a coordinate already rounded to 1e-7 exactly as
// strconv.FormatFloat(v, 'f', -1, 64) would, with integer arithmetic only:
// shortest float formatting dominated the cost of a page.
func appendFixed7(b []byte, v float64) []byte {
	n := int64(math.Round(v * 1e7))
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, n/1e7, 10)
	frac := n % 1e7
	if frac == 0 {
		return b
	}
	var d [8]byte
	d[0] = '.'
	for k := 7; k >= 1; k-- {
		d[k] = byte('0' + frac%10)
		frac /= 10
	}
	end := 8
	for d[end-1] == '0' {
		end--
	}
	return append(b, d[:end]...)
}

func (fw *featureWriter) gmlRing(b []byte, ring int) []byte {
	r := fw.sh.rings[ring]
	if fw.q.format == fmtGML2 {
		b = append(b, `<gml:LinearRing><gml:coordinates decimal="." cs="," ts=" ">`...)
		for j, p := range r {
			if j > 0 {
				b = append(b, ' ')
			}
			b = fw.appendCoord(b, p, ',')
		}
		return append(b, "</gml:coordinates></gml:LinearRing>"...)
	}
	b = append(b, `<gml:LinearRing><gml:posList srsDimension="2">`...)
	for j, p := range r {
		if j > 0 {
			b = append(b, ' ')
		}
		b = fw.appendCoord(b, p, ' ')
	}
	return append(b, "</gml:posList></gml:LinearRing>"...)
}

// gmlPolygon writes rings [first, last) as one polygon; id is its gml:id
// suffix (GML 3.2 requires ids on geometries) and srs is set only at the top.
func (fw *featureWriter) gmlPolygon(b []byte, first, last int, id string, srs bool) []byte {
	b = append(b, "<gml:Polygon"...)
	if fw.q.format == fmtGML32 {
		b = append(b, ` gml:id="`...)
		b = append(b, fw.gid...)
		b = append(b, id...)
		b = append(b, '"')
	}
	if srs {
		b = fw.srsAttr(b)
	}
	b = append(b, '>')
	for k := first; k < last; k++ {
		switch {
		case fw.q.format == fmtGML2 && k == first:
			b = fw.gmlRing(append(b, "<gml:outerBoundaryIs>"...), k)
			b = append(b, "</gml:outerBoundaryIs>"...)
		case fw.q.format == fmtGML2:
			b = fw.gmlRing(append(b, "<gml:innerBoundaryIs>"...), k)
			b = append(b, "</gml:innerBoundaryIs>"...)
		case k == first:
			b = fw.gmlRing(append(b, "<gml:exterior>"...), k)
			b = append(b, "</gml:exterior>"...)
		default:
			b = fw.gmlRing(append(b, "<gml:interior>"...), k)
			b = append(b, "</gml:interior>"...)
		}
	}
	return append(b, "</gml:Polygon>"...)
}

func (fw *featureWriter) srsAttr(b []byte) []byte {
	b = append(b, ` srsName="`...)
	b = appendEscaped(b, fw.q.srs.name)
	b = append(b, '"')
	if fw.q.format != fmtGML2 {
		b = append(b, ` srsDimension="2"`...)
	}
	return b
}

func (fw *featureWriter) gmlFeature(i int, member bool) {
	s := fw.s
	g := &s.grid
	g.shape(i, &fw.sh)
	a := g.attrs(i, &fw.sh)
	fw.gid = appendInt(append(append(fw.gid[:0], s.local...), '.'), i)
	b := fw.b
	if member {
		if fw.q.format == fmtGML32 {
			b = append(b, "<wfs:member>\n"...)
		} else {
			b = append(b, "<gml:featureMember>\n"...)
		}
	}
	p := s.prefix
	b = append(b, '<')
	b = append(b, p...)
	b = append(b, ':')
	b = append(b, s.local...)
	if fw.q.format == fmtGML2 {
		b = append(b, ` fid="`...)
	} else {
		b = append(b, ` gml:id="`...)
	}
	b = append(b, fw.gid...)
	b = append(b, "\">\n<"...)
	b = append(b, p+":"+geometryName+">"...)
	sh := &fw.sh
	switch {
	case sh.multi && fw.q.format == fmtGML2:
		b = fw.srsAttr(append(b, "<gml:MultiPolygon"...))
		b = append(b, '>')
		for k := range sh.nrings {
			b = append(b, "<gml:polygonMember>"...)
			b = fw.gmlPolygon(b, k, k+1, "", false)
			b = append(b, "</gml:polygonMember>"...)
		}
		b = append(b, "</gml:MultiPolygon>"...)
	case sh.multi:
		b = append(b, "<gml:MultiSurface"...)
		if fw.q.format == fmtGML32 {
			b = append(b, ` gml:id="`...)
			b = append(b, fw.gid...)
			b = append(b, `.geom"`...)
		}
		b = fw.srsAttr(b)
		b = append(b, '>')
		for k := range sh.nrings {
			b = append(b, "<gml:surfaceMember>"...)
			b = fw.gmlPolygon(b, k, k+1, ".geom."+strconv.Itoa(k), false)
			b = append(b, "</gml:surfaceMember>"...)
		}
		b = append(b, "</gml:MultiSurface>"...)
	default:
		b = fw.gmlPolygon(b, 0, sh.nrings, ".geom", true)
	}
	b = append(b, "</"+p+":"+geometryName+">\n"...)
	for k, at := range schemaAttrs {
		b = append(b, '<')
		b = append(b, p...)
		b = append(b, ':')
		b = append(b, at.Name...)
		mark := len(b)
		var ok bool
		b = append(b, '>')
		start := len(b)
		b, ok = a.appendValue(b, k)
		if !ok {
			b = append(b[:mark], ` xsi:nil="true"/>`+"\n"...)
			continue
		}
		if at.XSDType == "string" {
			v := string(b[start:])
			b = appendEscaped(b[:start], v)
		}
		b = append(b, "</"...)
		b = append(b, p...)
		b = append(b, ':')
		b = append(b, at.Name...)
		b = append(b, ">\n"...)
	}
	b = append(b, "</"...)
	b = append(b, p...)
	b = append(b, ':')
	b = append(b, s.local...)
	b = append(b, ">\n"...)
	if member {
		if fw.q.format == fmtGML32 {
			b = append(b, "</wfs:member>\n"...)
		} else {
			b = append(b, "</gml:featureMember>\n"...)
		}
	}
	fw.b = b
}

func (fw *featureWriter) writeJSON() {
	s, q := fw.s, fw.q
	// GeoServer answers a URN srsName with lat/lon GeoJSON; everyone else
	// keeps RFC 7946 lon/lat.
	latLon := q.srsGiven && q.srs.latLon && s.fl.geojsonFollowsSRS
	fw.q.srs.latLon = latLon
	b := append(fw.b, `{"type":"FeatureCollection"`...)
	counts := func(b []byte) []byte {
		m, known := fw.matchedText()
		if s.fl.geojsonCountsLast {
			b = append(b, `,"totalFeatures":`...)
			if known {
				b = append(b, m...)
			} else {
				b = append(b, `"unknown"`...)
			}
		}
		if known {
			b = append(b, `,"numberMatched":`...)
			b = append(b, m...)
		}
		b = append(b, `,"numberReturned":`...)
		b = appendInt(b, len(fw.ids))
		b = append(b, `,"timeStamp":"`...)
		b = s.opts.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
		return append(b, '"')
	}
	if !s.fl.geojsonCountsLast {
		b = counts(b)
	}
	b = append(b, `,"features":[`...)
	fw.b = b
	fw.emit()
	for k, i := range fw.ids {
		if k > 0 {
			fw.b = append(fw.b, ',')
		}
		fw.jsonFeature(i)
		fw.afterFeature(k)
	}
	if fw.truncate {
		fw.abort()
	}
	b = append(fw.b, ']')
	if s.fl.geojsonCountsLast {
		b = counts(b)
	}
	if fw.next != "" || fw.previous != "" {
		b = append(b, `,"links":[`...)
		if fw.next != "" {
			b = append(b, `{"rel":"next","type":"application/json","href":`...)
			b = appendJSONString(b, fw.next)
			b = append(b, '}')
		}
		if fw.previous != "" {
			if fw.next != "" {
				b = append(b, ',')
			}
			b = append(b, `{"rel":"previous","type":"application/json","href":`...)
			b = appendJSONString(b, fw.previous)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if latLon {
		b = append(b, `,"crs":{"type":"name","properties":{"name":`...)
		b = appendJSONString(b, q.srs.name)
		b = append(b, "}}"...)
	}
	fw.b = append(b, "}\n"...)
	fw.emit()
}

func (fw *featureWriter) jsonRing(b []byte, ring int) []byte {
	b = append(b, '[')
	for j, p := range fw.sh.rings[ring] {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = fw.appendCoord(b, p, ',')
		b = append(b, ']')
	}
	return append(b, ']')
}

func (fw *featureWriter) jsonFeature(i int) {
	s := fw.s
	g := &s.grid
	g.shape(i, &fw.sh)
	a := g.attrs(i, &fw.sh)
	sh := &fw.sh
	b := append(fw.b, `{"type":"Feature","id":"`...)
	b = append(b, s.local...)
	b = append(b, '.')
	b = appendInt(b, i)
	if sh.multi {
		b = append(b, `","geometry":{"type":"MultiPolygon","coordinates":[`...)
		for k := range sh.nrings {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = fw.jsonRing(b, k)
			b = append(b, ']')
		}
	} else {
		b = append(b, `","geometry":{"type":"Polygon","coordinates":[`...)
		for k := range sh.nrings {
			if k > 0 {
				b = append(b, ',')
			}
			b = fw.jsonRing(b, k)
		}
	}
	b = append(b, `]},"geometry_name":"`+geometryName+`","properties":{`...)
	for k, at := range schemaAttrs {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, at.Name)
		b = append(b, ':')
		mark := len(b)
		var ok bool
		b, ok = a.appendValue(b, k)
		switch {
		case !ok:
			b = append(b[:mark], "null"...)
		case jsonQuoted(at.XSDType):
			v := string(b[mark:])
			b = appendJSONString(b[:mark], v)
		}
	}
	fw.b = append(b, "}}"...)
}
