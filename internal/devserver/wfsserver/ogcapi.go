// OGC API - Features (Part 1, core and GeoJSON) over the same parcels, under a path
// segment "ogcapi": the landing page, conformance, an OpenAPI document stating limit's
// maximum, the collection, and its items with bbox, limit and offset. The items share
// the WFS's quirks: without sorting (the standard has none) an UnstableOrder server
// pages like a parallel-scan PostgreSQL, and next links follow offsets regardless, as
// MapServer's do; limits above CountDefault are capped silently.

package wfsserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// OGC API - Features conformance classes the fixture declares.
const (
	confCore    = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"
	confGeoJSON = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson"
	confOAS30   = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30"
	crs84       = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
	confCRS     = "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"
	epsg4326    = "http://www.opengis.net/def/crs/EPSG/0/4326"
	// ogcapiDefaultLimit is the page when limit is not given, as in MapServer.
	ogcapiDefaultLimit = 10
)

// serveOGCAPI answers a request whose path is root (up to and including "/ogcapi")
// followed by rest.
func (s *Server) serveOGCAPI(w http.ResponseWriter, r *http.Request, root, rest string, fs *faultState) {
	base := s.ogcapiBase(r, root)
	if f := r.URL.Query().Get("f"); f != "" && f != "json" && f != "application/json" && f != "application/geo+json" {
		s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "unsupported format f="+f)
		return
	}
	coll := "/collections/" + s.local
	if path.Dir(rest) == coll+"/items" {
		s.serveOGCAPIItem(w, r, base, fs, path.Base(rest))
		return
	}
	switch strings.TrimSuffix(rest, "/") {
	case "":
		s.other.Add(1)
		writeJSONDoc(w, "application/json", map[string]any{
			"title": "geoflow sample parcels",
			"links": []map[string]string{
				{"rel": "self", "type": "application/json", "href": base + "?f=json"},
				{"rel": "conformance", "type": "application/json", "href": base + "/conformance?f=json"},
				{"rel": "data", "type": "application/json", "href": base + "/collections?f=json"},
				{"rel": "service-desc", "type": "application/vnd.oai.openapi+json;version=3.0", "href": base + "/api?f=json"},
			},
		})
	case "/conformance":
		s.other.Add(1)
		conf := []string{confCore, confGeoJSON, confOAS30}
		if s.opts.OGCAPICRS {
			conf = append(conf, confCRS)
		}
		writeJSONDoc(w, "application/json", map[string]any{"conformsTo": conf})
	case "/api":
		s.other.Add(1)
		limit := map[string]any{"name": "limit", "in": "query", "required": false,
			"schema": map[string]any{"type": "integer", "minimum": 1, "maximum": s.opts.CountDefault, "default": ogcapiDefaultLimit}}
		writeJSONDoc(w, "application/vnd.oai.openapi+json;version=3.0", map[string]any{
			"openapi": "3.0.2",
			"info":    map[string]string{"title": "geoflow sample parcels", "version": "1.0"},
			"paths": map[string]any{
				coll + "/items": map[string]any{"get": map[string]any{"parameters": []any{
					map[string]string{"$ref": "#/components/parameters/limit"},
					map[string]string{"$ref": "#/components/parameters/bbox"},
				}}},
			},
			"components": map[string]any{"parameters": map[string]any{
				"limit": limit,
				"bbox":  map[string]any{"name": "bbox", "in": "query", "schema": map[string]any{"type": "array", "items": map[string]string{"type": "number"}}},
			}},
		})
	case "/collections":
		s.other.Add(1)
		writeJSONDoc(w, "application/json", map[string]any{"collections": []any{s.ogcapiCollection(base)}})
	case coll:
		s.other.Add(1)
		writeJSONDoc(w, "application/json", s.ogcapiCollection(base))
	case coll + "/items":
		s.serveOGCAPIItems(w, r, base, fs)
	default:
		s.other.Add(1)
		s.ogcapiError(w, http.StatusNotFound, "NotFound", "no such resource: "+rest)
	}
}

// ogcapiBase is the URL of the landing page.
func (s *Server) ogcapiBase(r *http.Request, root string) string {
	if s.opts.BaseURL != "" {
		return strings.TrimSuffix(s.opts.BaseURL, "/") + "/ogcapi"
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + root
}

// ogcapiCRSList is the collection's crs list: CRS84, and EPSG:4326 with Part 2.
func (s *Server) ogcapiCRSList() []string {
	if s.opts.OGCAPICRS {
		return []string{crs84, epsg4326}
	}
	return []string{crs84}
}

func (s *Server) ogcapiCollection(base string) map[string]any {
	e := s.opts.Extent
	href := base + "/collections/" + s.local
	return map[string]any{
		"id":       s.local,
		"title":    "Parcels",
		"itemType": "feature",
		"extent": map[string]any{"spatial": map[string]any{
			"bbox": [][4]float64{{e.Min[0], e.Min[1], e.Max[0], e.Max[1]}},
			"crs":  crs84,
		}},
		"crs":        s.ogcapiCRSList(),
		"storageCrs": crs84,
		"links": []map[string]string{
			{"rel": "self", "type": "application/json", "href": href + "?f=json"},
			{"rel": "items", "type": "application/geo+json", "href": href + "/items?f=json"},
		},
	}
}

// serveOGCAPIItem answers items/{featureId}: the feature as the WFS answers it by
// RESOURCEID (a query by id sees the parcels a listing hides, Changes.Hidden), or 404
// when the revision does not serve it. The answer is the Feature, encoded as a
// listing encodes it.
func (s *Server) serveOGCAPIItem(w http.ResponseWriter, r *http.Request, base string, fs *faultState, id string) {
	tail, ok := strings.CutPrefix(id, s.local+".")
	n, err := strconv.Atoi(tail)
	if !ok || err != nil || n < 0 || n >= s.grid.n || !s.state().present(n) || s.state().empty {
		s.other.Add(1)
		s.ogcapiError(w, http.StatusNotFound, "NotFound", "no such feature: "+id)
		return
	}
	q := &query{request: "getfeature", version: "2.0.0", params: map[string]string{}, format: fmtJSON,
		count: 1, countGiven: true, ogcapi: true, ogcapiItem: true, hasIDs: true, ids: []int{n}}
	if c := r.URL.Query().Get("crs"); c != "" {
		if !s.opts.OGCAPICRS || (c != crs84 && c != epsg4326) {
			s.other.Add(1)
			s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "crs "+c+" is not supported")
			return
		}
		q.ogcapiLatLon = c == epsg4326
		w.Header().Set("Content-Crs", "<"+c+">")
	}
	q.ogcapiItems = base + "/collections/" + s.local + "/items"
	s.serveGetFeature(w, r, q, fs)
}

// serveOGCAPIItems answers /items as the WFS answers a GetFeature: the same selection,
// order, faults and costs, with OGC API parameters and offset next links.
func (s *Server) serveOGCAPIItems(w http.ResponseWriter, r *http.Request, base string, fs *faultState) {
	v := r.URL.Query()
	q := &query{request: "getfeature", version: "2.0.0", params: map[string]string{}, format: fmtJSON,
		count: ogcapiDefaultLimit, countGiven: true, ogcapi: true}
	for k, x := range v {
		switch k {
		case "bbox", "limit", "offset", "f", "datetime", "bbox-crs":
		case "crs":
			if !s.opts.OGCAPICRS || (x[0] != crs84 && x[0] != epsg4326) {
				s.other.Add(1)
				s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "crs "+x[0]+" is not supported")
				return
			}
			// EPSG:4326 is latitude first; the response says which CRS it is in.
			q.ogcapiLatLon = x[0] == epsg4326
			w.Header().Set("Content-Crs", "<"+x[0]+">")
		default:
			// The standard says unknown parameters are an error (400): a filter the server
			// cannot evaluate must not be ignored.
			s.other.Add(1)
			s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "unknown query parameter "+k+"="+x[0])
			return
		}
	}
	if c := v.Get("bbox-crs"); c != "" && c != crs84 {
		s.other.Add(1)
		s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "bbox-crs "+c+" is not supported")
		return
	}
	if b := v.Get("bbox"); b != "" {
		parts := strings.Split(b, ",")
		if len(parts) != 4 {
			s.other.Add(1)
			s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "bbox must have 4 numbers: "+b)
			return
		}
		var f [4]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				s.other.Add(1)
				s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", "bbox: "+p+" is not a number")
				return
			}
			f[i] = x
		}
		q.bbox = &orb.Bound{Min: orb.Point{f[0], f[1]}, Max: orb.Point{f[2], f[3]}}
	}
	for _, p := range []struct {
		name string
		to   *int
		min  int
	}{{"limit", &q.count, 1}, {"offset", &q.startIndex, 0}} {
		if x := v.Get(p.name); x != "" {
			n, err := strconv.Atoi(x)
			if err != nil || n < p.min {
				s.other.Add(1)
				s.ogcapiError(w, http.StatusBadRequest, "InvalidParameterValue", p.name+" must be an integer of at least "+strconv.Itoa(p.min)+": "+x)
				return
			}
			*p.to = n
		}
	}
	q.startGiven = v.Has("offset")
	if s.opts.OGCAPIIgnoreOffset {
		q.startIndex = 0
		q.ignoredOffset, _ = strconv.Atoi(v.Get("offset"))
	}
	q.count = min(q.count, s.opts.CountDefault)
	q.ogcapiItems = base + "/collections/" + s.local + "/items"
	s.serveGetFeature(w, r, q, fs)
}

// ogcapiNext is the next page's link of an items response: the same query at the next
// offset.
func (s *Server) ogcapiNext(r *http.Request, q *query, total, returned int) string {
	at := q.startIndex + q.ignoredOffset // where the client thinks it is
	if returned == 0 || at+returned >= total {
		return ""
	}
	v := url.Values{}
	for k, x := range r.URL.Query() {
		v[k] = x
	}
	v.Set("offset", strconv.Itoa(at+returned))
	v.Set("limit", strconv.Itoa(q.count))
	return q.ogcapiItems + "?" + v.Encode()
}

func (s *Server) ogcapiError(w http.ResponseWriter, status int, code, text string) {
	s.exceptions.Add(1)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "description": text})
}

func writeJSONDoc(w http.ResponseWriter, ct string, doc any) {
	w.Header().Set("Content-Type", ct)
	_ = json.NewEncoder(w).Encode(doc)
}
