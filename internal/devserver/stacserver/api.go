package stacserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Conformance are the classes the server declares: what it does, no more (no filter, no
// sort: a client must not think it can ask for them).
var Conformance = []string{
	"https://api.stacspec.org/v1.0.0/core",
	"https://api.stacspec.org/v1.0.0/collections",
	"https://api.stacspec.org/v1.0.0/item-search",
	"https://api.stacspec.org/v1.0.0/ogcapi-features",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
}

// api answers the GET resources of a STAC API (landing page, conformance, collections,
// a collection's items); false when the path is none of them.
func (s *Server) api(w http.ResponseWriter, r *http.Request) bool {
	base := "http://" + r.Host
	coll := "/collections/" + s.o.Collection
	var out any
	switch r.URL.Path {
	case "/", "":
		out = map[string]any{"type": "Catalog", "stac_version": "1.0.0", "id": "fixture", "title": "Fixture STAC API",
			"description": "Aerial scenes for tests", "conformsTo": Conformance, "links": []map[string]any{
				{"rel": "self", "href": base + "/", "type": "application/json"},
				{"rel": "conformance", "href": base + "/conformance", "type": "application/json"},
				{"rel": "data", "href": base + "/collections", "type": "application/json"},
				{"rel": "search", "href": base + "/search", "type": "application/geo+json", "method": "POST"},
			}}
	case "/conformance":
		out = map[string]any{"conformsTo": Conformance}
	case "/collections":
		out = map[string]any{"collections": []any{s.collection(base)}, "links": []any{}}
	case coll:
		out = s.collection(base)
	case coll + "/items":
		s.itemsPage(w, r, base)
		return true
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
	return true
}

// collection is the one collection, with its extent and item_assets.
func (s *Server) collection(base string) map[string]any {
	e := s.o.Extent
	return map[string]any{"type": "Collection", "stac_version": "1.0.0", "id": s.o.Collection, "title": "Aerial scenes",
		"description": "Fixture scenes", "license": "proprietary",
		"extent": map[string]any{
			"spatial":  map[string]any{"bbox": [][]float64{{e.Min[0], e.Min[1], e.Max[0], e.Max[1]}}},
			"temporal": map[string]any{"interval": [][]any{{"2024-05-01T00:00:00Z", nil}}},
		},
		"item_assets": map[string]any{
			"visual":    map[string]any{"type": "image/tiff; application=geotiff; profile=cloud-optimized", "roles": []string{"visual"}},
			"thumbnail": map[string]any{"type": "image/png", "roles": []string{"thumbnail"}},
		},
		"links": []map[string]any{{"rel": "items", "href": base + "/collections/" + s.o.Collection + "/items", "type": "application/geo+json"}}}
}

// itemsPage answers GET /collections/{id}/items with limit, bbox and a next link carrying a
// token, as OGC API - Features servers page.
func (s *Server) itemsPage(w http.ResponseWriter, r *http.Request, base string) {
	s.mu.Lock()
	s.st.Searches++
	s.mu.Unlock()
	q := searchBody{Collections: []string{s.o.Collection}, Token: r.URL.Query().Get("token")}
	q.Limit, _ = strconv.Atoi(r.URL.Query().Get("limit"))
	if b := strings.Split(r.URL.Query().Get("bbox"), ","); len(b) == 4 {
		for _, v := range b {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				http.Error(w, `{"code":"BadRequest","description":"bbox"}`, http.StatusBadRequest)
				return
			}
			q.BBox = append(q.BBox, f)
		}
	}
	w.Header().Set("Content-Type", "application/geo+json")
	_ = json.NewEncoder(w).Encode(s.results(q, base, func(next searchBody) map[string]any {
		v := r.URL.Query()
		v.Set("token", next.Token)
		return map[string]any{"rel": "next", "href": base + r.URL.Path + "?" + v.Encode(), "type": "application/geo+json"}
	}))
}
