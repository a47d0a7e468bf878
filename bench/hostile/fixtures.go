package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// itemsRewriter wraps the sample server's OGC API: every 200 answer of .../items (a
// FeatureCollection) is decoded, handed to rewrite with its request, and written again.
// Other paths pass through unchanged.
type itemsRewriter struct {
	next    http.Handler
	rewrite func(r *http.Request, fc map[string]json.RawMessage) error
}

// ServeHTTP implements http.Handler.
func (p *itemsRewriter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/items") {
		p.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		copyRecorded(w, rec)
		return
	}
	var fc map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &fc); err != nil {
		http.Error(w, fmt.Sprintf("hostile proxy: decoding the items answer: %v", err), http.StatusBadGateway)
		return
	}
	if err := p.rewrite(r, fc); err != nil {
		http.Error(w, fmt.Sprintf("hostile proxy: %v", err), http.StatusBadGateway)
		return
	}
	writeJSON(w, rec.Header().Get("Content-Type"), fc)
}

func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func writeJSON(w http.ResponseWriter, ct string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("hostile proxy: encoding: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", cmp.Or(ct, "application/geo+json"))
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// feature is the part of a GeoJSON feature the proxies look at; the rest is kept raw.
type feature = map[string]json.RawMessage

func featureID(f feature) string {
	var id string
	_ = json.Unmarshal(f["id"], &id)
	return id
}

// dropFeatures removes the features whose id hide names from fc and sets numberReturned to
// what is left: the page is short, and says so only by its own length.
func dropFeatures(fc map[string]json.RawMessage, hide func(id string) bool) error {
	var feats []feature
	if err := json.Unmarshal(fc["features"], &feats); err != nil {
		return fmt.Errorf("decoding features: %w", err)
	}
	feats = slices.DeleteFunc(feats, func(f feature) bool { return hide(featureID(f)) })
	b, err := json.Marshal(feats)
	if err != nil {
		return err
	}
	fc["features"] = b
	if _, ok := fc["numberReturned"]; ok {
		fc["numberReturned"] = json.RawMessage(strconv.Itoa(len(feats)))
	}
	return nil
}

// requestBound is the bbox parameter of an items request; ok is false without one.
func requestBound(r *http.Request) (orb.Bound, bool) {
	parts := strings.Split(r.URL.Query().Get("bbox"), ",")
	if len(parts) != 4 {
		return orb.Bound{}, false
	}
	var f [4]float64
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return orb.Bound{}, false
		}
		f[i] = x
	}
	return orb.Bound{Min: orb.Point{f[0], f[1]}, Max: orb.Point{f[2], f[3]}}, true
}

// parcelIndex is the index of a sample parcel's id ("parcels.42" is 42).
func parcelIndex(id string) (int, bool) {
	_, n, ok := strings.Cut(id, ".")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil
}

// omitting is row 1: the server leaves the given parcels out of every page; its counts
// (numberMatched) still include them.
func omitting(srv *wfsserver.Server, ids ...int) http.Handler {
	hide := map[string]bool{}
	for _, i := range ids {
		hide[srv.Feature(i).ID] = true
	}
	return &itemsRewriter{next: srv, rewrite: func(_ *http.Request, fc map[string]json.RawMessage) error {
		return dropFeatures(fc, func(id string) bool { return hide[id] })
	}}
}

// filteredView is row 2: once Hide is on, the listing leaves out every parcel hidden names
// and lowers numberMatched by those of the request's area, consistently, as an access
// rule or a view would; asked by id (items/{id}), the server still answers every parcel.
type filteredView struct {
	srv    *wfsserver.Server
	hidden func(i int) bool
	Hide   atomic.Bool
	rw     *itemsRewriter
}

func newFilteredView(srv *wfsserver.Server, hidden func(i int) bool) *filteredView {
	v := &filteredView{srv: srv, hidden: hidden}
	v.rw = &itemsRewriter{next: srv, rewrite: v.rewrite}
	return v
}

func (v *filteredView) rewrite(r *http.Request, fc map[string]json.RawMessage) error {
	if !v.Hide.Load() {
		return nil
	}
	if err := dropFeatures(fc, func(id string) bool {
		i, ok := parcelIndex(id)
		return ok && v.hidden(i)
	}); err != nil {
		return err
	}
	var matched int
	if err := json.Unmarshal(fc["numberMatched"], &matched); err != nil {
		return nil // no count to lower
	}
	b, ok := requestBound(r)
	if !ok {
		b = orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}} // every parcel
	}
	for _, i := range v.srv.FeaturesIn(b) {
		if v.hidden(i) {
			matched--
		}
	}
	fc["numberMatched"] = json.RawMessage(strconv.Itoa(max(matched, 0)))
	return nil
}

// ServeHTTP implements http.Handler. items/{id} is the sample server's own answer, the
// parcel hidden or not, encoded as its listings are (a copy encoded otherwise would
// hash as a changed parcel).
func (v *filteredView) ServeHTTP(w http.ResponseWriter, r *http.Request) { v.rw.ServeHTTP(w, r) }

// countingHigh is row 3: every items answer claims numberMatched n.
func countingHigh(srv http.Handler, n int64) http.Handler {
	return &itemsRewriter{next: srv, rewrite: func(_ *http.Request, fc map[string]json.RawMessage) error {
		fc["numberMatched"] = json.RawMessage(strconv.FormatInt(n, 10))
		return nil
	}}
}

// samePage is row 4: every items request, wherever and whatever offset, is answered with
// the same full page of features, no numberMatched, and a next link to itself.
type samePage struct {
	next  http.Handler
	page  json.RawMessage // the features array
	count int
}

// newSamePage takes the first limit features the sample server serves as the page.
func newSamePage(srv http.Handler, limit int) (*samePage, error) {
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ogcapi/collections/parcels/items?limit="+strconv.Itoa(limit), nil))
	var fc struct {
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &fc); err != nil {
		return nil, fmt.Errorf("reading the first page of the sample server: %w", err)
	}
	if len(fc.Features) != limit {
		return nil, fmt.Errorf("the sample server's first page holds %d features, not %d", len(fc.Features), limit)
	}
	b, _ := json.Marshal(fc.Features)
	return &samePage{next: srv, page: b, count: limit}, nil
}

// ServeHTTP implements http.Handler.
func (p *samePage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/items") {
		p.next.ServeHTTP(w, r)
		return
	}
	self := "http://" + r.Host + r.URL.RequestURI()
	writeJSON(w, "application/geo+json", map[string]any{
		"type":           "FeatureCollection",
		"features":       p.page,
		"numberReturned": p.count,
		"links": []map[string]string{
			{"rel": "self", "type": "application/geo+json", "href": self},
			{"rel": "next", "type": "application/geo+json", "href": self},
		},
	})
}

// arcgisRewriter wraps the sample ArcGIS layer: the answers of id listings
// (returnIdsOnly) and counts (returnCountOnly) go through ids and count.
type arcgisRewriter struct {
	next  http.Handler
	ids   func(doc map[string]json.RawMessage) error
	count func(doc map[string]json.RawMessage) error
}

// ServeHTTP implements http.Handler.
func (p *arcgisRewriter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/query") {
		p.next.ServeHTTP(w, r)
		return
	}
	if err := r.ParseForm(); err != nil { // the layer's own ParseForm then finds it done
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var change func(map[string]json.RawMessage) error
	switch {
	case r.Form.Get("returnIdsOnly") == "true":
		change = p.ids
	case r.Form.Get("returnCountOnly") == "true":
		change = p.count
	}
	if change == nil {
		p.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	var doc map[string]json.RawMessage
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil || doc["error"] != nil {
		copyRecorded(w, rec)
		return
	}
	if err := change(doc); err != nil {
		http.Error(w, fmt.Sprintf("hostile proxy: %v", err), http.StatusBadGateway)
		return
	}
	writeJSON(w, "application/json", doc)
}

// alwaysExceeded is row 5: every id listing says exceededTransferLimit, however small
// its area.
func alwaysExceeded(srv *arcgisserver.Server) http.Handler {
	return &arcgisRewriter{next: srv, ids: func(doc map[string]json.RawMessage) error {
		doc["exceededTransferLimit"] = json.RawMessage("true")
		return nil
	}}
}

// phantomIDs is row 6: id listings name object ids from the real ones up to total, and
// counts say total; asked for, the phantom ids return nothing.
func phantomIDs(srv *arcgisserver.Server, total int) http.Handler {
	held := srv.Len()
	return &arcgisRewriter{next: srv,
		ids: func(doc map[string]json.RawMessage) error {
			var ids []int
			if err := json.Unmarshal(doc["objectIds"], &ids); err != nil {
				return fmt.Errorf("decoding objectIds: %w", err)
			}
			var b bytes.Buffer
			b.Grow(8 * total)
			b.WriteByte('[')
			for k, id := range ids {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(id))
			}
			for id := held + 1; id <= total; id++ {
				if b.Len() > 1 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(id))
			}
			b.WriteByte(']')
			doc["objectIds"] = b.Bytes()
			return nil
		},
		count: func(doc map[string]json.RawMessage) error {
			var n int
			if err := json.Unmarshal(doc["count"], &n); err != nil {
				return fmt.Errorf("decoding count: %w", err)
			}
			doc["count"] = json.RawMessage(strconv.Itoa(n + total - held))
			return nil
		},
	}
}

// giants is row 7: an OGC API collection of a few polygons of vertices vertices each,
// one a page (its OpenAPI document says limit's maximum is 1), each at the centre of
// one quadrant of the extent, so that a harvest splits the area once and fetches them
// all at once. Each feature is under every per-feature limit of geoflow's defaults
// (5,000,000 vertices, 128 MiB encoded).
type giants struct {
	extent   orb.Bound
	centres  []orb.Point
	radius   float64
	vertices int
}

func newGiants(n, vertices int) *giants {
	g := &giants{extent: orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}, radius: 0.01, vertices: vertices}
	c := g.extent.Center()
	for k := range n {
		q := [4]orb.Point{{-1, -1}, {1, -1}, {-1, 1}, {1, 1}}[k%4]
		d := 0.025 * float64(1+k/4)
		g.centres = append(g.centres, orb.Point{c[0] + q[0]*d, c[1] + q[1]*d})
	}
	return g
}

func (g *giants) bound(k int) orb.Bound {
	c := g.centres[k]
	return orb.Bound{Min: orb.Point{c[0] - g.radius, c[1] - g.radius}, Max: orb.Point{c[0] + g.radius, c[1] + g.radius}}
}

// ServeHTTP implements http.Handler: the landing page, conformance, the API document,
// the collection and its items (bbox, limit, offset).
func (g *giants) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host + "/ogcapi"
	coll := base + "/collections/giants"
	e := g.extent
	switch strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/ogcapi"), "/") {
	case "":
		writeJSON(w, "application/json", map[string]any{"links": []map[string]string{
			{"rel": "conformance", "href": base + "/conformance"},
			{"rel": "data", "href": base + "/collections"},
			{"rel": "service-desc", "type": "application/vnd.oai.openapi+json;version=3.0", "href": base + "/api"},
		}})
	case "/conformance":
		writeJSON(w, "application/json", map[string]any{"conformsTo": []string{
			"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
			"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
			"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30"}})
	case "/api":
		writeJSON(w, "application/vnd.oai.openapi+json;version=3.0", map[string]any{"openapi": "3.0.2",
			"paths": map[string]any{"/collections/giants/items": map[string]any{"get": map[string]any{"parameters": []any{
				map[string]any{"name": "limit", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": 1, "default": 1}},
			}}}}})
	case "/collections/giants":
		writeJSON(w, "application/json", map[string]any{"id": "giants", "itemType": "feature",
			"extent": map[string]any{"spatial": map[string]any{"bbox": [][4]float64{{e.Min[0], e.Min[1], e.Max[0], e.Max[1]}}}},
			"links":  []map[string]string{{"rel": "items", "type": "application/geo+json", "href": coll + "/items"}}})
	case "/collections/giants/items":
		g.items(w, r, coll+"/items")
	default:
		http.NotFound(w, r)
	}
}

func (g *giants) items(w http.ResponseWriter, r *http.Request, href string) {
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	var match []int
	b, ok := requestBound(r)
	for k := range g.centres {
		if !ok || b.Intersects(g.bound(k)) {
			match = append(match, k)
		}
	}
	page := match[min(max(offset, 0), len(match)):]
	page = page[:min(1, len(page))] // limit's maximum is 1
	bw := bufio.NewWriterSize(w, 1<<16)
	w.Header().Set("Content-Type", "application/geo+json")
	fmt.Fprintf(bw, `{"type":"FeatureCollection","numberMatched":%d,"numberReturned":%d,"features":[`, len(match), len(page))
	for _, k := range page {
		g.writeFeature(bw, k)
	}
	bw.WriteString(`],"links":[`)
	if offset+len(page) < len(match) {
		v := url.Values{}
		for k, x := range q {
			v[k] = x
		}
		v.Set("offset", strconv.Itoa(offset+len(page)))
		fmt.Fprintf(bw, `{"rel":"next","type":"application/geo+json","href":%q}`, href+"?"+v.Encode())
	}
	bw.WriteString(`]}`)
	_ = bw.Flush()
}

// writeFeature streams polygon k: a closed ring of g.vertices positions (the last the
// first again), counter-clockwise, at 1e-7 degrees.
func (g *giants) writeFeature(w *bufio.Writer, k int) {
	c := g.centres[k]
	fmt.Fprintf(w, `{"type":"Feature","id":"giants.%d","properties":{"name":"giant %d","vertices":%d},"geometry":{"type":"Polygon","coordinates":[[`, k, k, g.vertices)
	n := g.vertices - 1
	var num []byte
	for i := 0; i <= n; i++ {
		a := 2 * math.Pi * float64(i%n) / float64(n)
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteByte('[')
		num = strconv.AppendFloat(num[:0], math.Round((c[0]+g.radius*math.Cos(a))*1e7)/1e7, 'f', -1, 64)
		w.Write(num)
		w.WriteByte(',')
		num = strconv.AppendFloat(num[:0], math.Round((c[1]+g.radius*math.Sin(a))*1e7)/1e7, 'f', -1, 64)
		w.Write(num)
		w.WriteByte(']')
	}
	w.WriteString(`]]}}`)
}

// unclosedRing is row 8: the exterior ring of one parcel comes without its closing
// position.
func unclosedRing(srv *wfsserver.Server, index int) http.Handler {
	target := srv.Feature(index).ID
	return &itemsRewriter{next: srv, rewrite: func(_ *http.Request, fc map[string]json.RawMessage) error {
		var feats []feature
		if err := json.Unmarshal(fc["features"], &feats); err != nil {
			return fmt.Errorf("decoding features: %w", err)
		}
		for _, f := range feats {
			if featureID(f) != target {
				continue
			}
			var g struct {
				Type        string          `json:"type"`
				Coordinates json.RawMessage `json:"coordinates"`
			}
			if err := json.Unmarshal(f["geometry"], &g); err != nil {
				return fmt.Errorf("decoding %s: %w", target, err)
			}
			var polys [][][][2]float64
			if g.Type == "Polygon" {
				polys = make([][][][2]float64, 1)
				if err := json.Unmarshal(g.Coordinates, &polys[0]); err != nil {
					return fmt.Errorf("decoding %s: %w", target, err)
				}
			} else if err := json.Unmarshal(g.Coordinates, &polys); err != nil || g.Type != "MultiPolygon" {
				return fmt.Errorf("%s is a %s, not a polygon (%v)", target, g.Type, err)
			}
			polys[0][0] = polys[0][0][:len(polys[0][0])-1] // the closing position
			var coords any = polys
			if g.Type == "Polygon" {
				coords = polys[0]
			}
			b, err := json.Marshal(map[string]any{"type": g.Type, "coordinates": coords})
			if err != nil {
				return err
			}
			f["geometry"] = b
		}
		b, err := json.Marshal(feats)
		fc["features"] = b
		return err
	}}
}
