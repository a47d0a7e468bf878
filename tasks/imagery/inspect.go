package imagery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/probe"
)

// maxCounted is how many collections of a STAC API Inspect asks for their item count
// (one request each); the rest are listed without.
const maxCounted = 50

// Inspect implements tasks.Kind.Inspect for imagery services: a WMS (its capabilities,
// 1.3.0 or 1.1.1) or a STAC API (its landing page). A URL that is neither, a tile URL
// template, or one naming another OGC service (SERVICE=WFS) is not of this kind.
func Inspect(ctx context.Context, env *tasks.Env, u string) (*tasks.Service, error) {
	if strings.Contains(u, "{") {
		return nil, probe.NotThisKind("a URL template is a tile service")
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return nil, probe.NotThisKind("not an http(s) URL")
	}
	svc := ""
	for k, v := range pu.Query() {
		if strings.EqualFold(k, "SERVICE") && len(v) > 0 {
			svc = strings.ToUpper(v[0])
		}
	}
	if svc != "" && svc != "WMS" {
		return nil, probe.NotThisKind("the URL asks for a %s", svc)
	}
	if svc == "" {
		r, err := probe.Get(ctx, env, "inspect", u, "application/json, application/xml;q=0.9", nil)
		if err != nil {
			return nil, fmt.Errorf("asking %s: %w", redact.URL(u), err)
		}
		if r.OK() && looksJSON(r.Body) {
			return inspectSTAC(ctx, env, u, r)
		}
		if r.OK() && isWMSCaps(r.Body) {
			return describeWMS(u, r)
		}
	}
	capsURL := ows.URL(u, [][2]string{{"SERVICE", "WMS"}, {"REQUEST", "GetCapabilities"}})
	r, err := probe.Get(ctx, env, "inspect", capsURL, "", nil)
	if err != nil {
		return nil, fmt.Errorf("asking %s for WMS capabilities: %w", redact.URL(u), err)
	}
	if !r.OK() || !isWMSCaps(r.Body) {
		return nil, probe.NotThisKind("neither a WMS nor a STAC API")
	}
	return describeWMS(capsURL, r)
}

func looksJSON(b []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) }

// isWMSCaps tells a WMS capabilities document by its root element.
func isWMSCaps(b []byte) bool {
	head := b[:min(len(b), 4096)]
	return bytes.Contains(head, []byte("<WMS_Capabilities")) || bytes.Contains(head, []byte("<WMT_MS_Capabilities"))
}

// describeWMS is the service a WMS capabilities document describes.
func describeWMS(u string, r *probe.Response) (*tasks.Service, error) {
	c, err := ParseCapabilities(bytes.NewReader(r.Body))
	if err != nil {
		return nil, fmt.Errorf("reading the capabilities of %s: %w", redact.URL(u), err)
	}
	s := &tasks.Service{Kind: "imagery", Protocol: "WMS " + c.Version, URL: redact.URL(u), Title: c.Title,
		CRSs: c.CRSs, RateLimit: probe.RateLimit(r.Header), Layers: []tasks.Layer{}}
	if c.MaxWidth > 0 && c.MaxHeight > 0 {
		s.Paging = fmt.Sprintf("GetMap chips of at most %dx%d pixels (MaxWidth, MaxHeight)", c.MaxWidth, c.MaxHeight)
		s.MaxPage = c.MaxWidth * c.MaxHeight
	} else {
		s.Notes = append(s.Notes, "the server advertises no MaxWidth/MaxHeight: chips are cut at max_size (2048 pixels)")
	}
	for _, l := range c.Named {
		s.Layers = append(s.Layers, tasks.Layer{Name: l.Name, Title: l.Title, Count: -1, Extent: l.Extent, CRSs: l.CRSs, Formats: c.Formats})
		if l.Extent == nil {
			s.Notes = append(s.Notes, fmt.Sprintf("layer %q advertises no extent", l.Name))
		}
	}
	return s, nil
}

// landing is the part of a STAC API's landing page Inspect reads.
type landing struct {
	Type        string   `json:"type"`
	STACVersion string   `json:"stac_version"`
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	ConformsTo  []string `json:"conformsTo"`
	Links       []Link   `json:"links"`
}

// collection is the part of a STAC collection Inspect and the online check read.
type collection struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Extent struct {
		Spatial struct {
			BBox [][]float64 `json:"bbox"`
		} `json:"spatial"`
	} `json:"extent"`
	ItemAssets map[string]struct {
		Type string `json:"type"`
	} `json:"item_assets"`
	Links []Link `json:"links"`
}

// bound is the collection's overall lon/lat extent (the first bbox), nil when it gives none.
func (c *collection) bound() *orb.Bound {
	if len(c.Extent.Spatial.BBox) == 0 {
		return nil
	}
	b := c.Extent.Spatial.BBox[0]
	switch len(b) {
	case 4:
		return &orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
	case 6:
		return &orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[3], b[4]}}
	}
	return nil
}

// inspectSTAC describes the STAC API whose landing page r is: its collections with their
// extent, item count and assets, and what its conformance classes promise.
func inspectSTAC(ctx context.Context, env *tasks.Env, u string, r *probe.Response) (*tasks.Service, error) {
	var l landing
	if err := json.Unmarshal(r.Body, &l); err != nil || (l.STACVersion == "" && !conforms(l.ConformsTo, "api.stacspec.org")) {
		return nil, probe.NotThisKind("a JSON document that is no STAC API landing page")
	}
	s := &tasks.Service{Kind: "imagery", Protocol: strings.TrimSpace("STAC API " + l.STACVersion), URL: redact.URL(u),
		Title: l.Title, RateLimit: probe.RateLimit(r.Header), Layers: []tasks.Layer{}}
	s.Paging, s.Filters, s.Sorting = stacAbilities(l.ConformsTo)
	if !conforms(l.ConformsTo, "item-search") {
		s.Notes = append(s.Notes, "the API does not declare item search: an imagery task searches POST /search")
	}
	colls, err := stacCollections(ctx, env, u, l.Links)
	if err != nil {
		return nil, err
	}
	for i, c := range colls {
		layer := tasks.Layer{Name: c.ID, Title: c.Title, Count: -1, Extent: c.bound()}
		for k, a := range c.ItemAssets {
			layer.Assets = append(layer.Assets, tasks.Field{Name: k, Type: a.Type})
		}
		if i < maxCounted {
			n, assets := stacCount(ctx, env, u, c)
			layer.Count = n
			if layer.Assets == nil {
				layer.Assets = assets
			}
		}
		sortFields(layer.Assets)
		s.Layers = append(s.Layers, layer)
	}
	if len(colls) > maxCounted {
		s.Notes = append(s.Notes, fmt.Sprintf("item counts asked for the first %d of %d collections only", maxCounted, len(colls)))
	}
	return s, nil
}

// stacAbilities reads paging, filter languages and sorting off a STAC API's conformance
// classes.
func stacAbilities(conformsTo []string) (paging string, filters []string, sorting bool) {
	if conforms(conformsTo, "item-search") || conforms(conformsTo, "ogcapi-features") {
		paging = "next links"
		filters = append(filters, "bbox", "datetime")
	}
	if conforms(conformsTo, "#query") {
		filters = append(filters, "query")
	}
	cql := false
	for _, lang := range [][2]string{{"cql2-text", "CQL2 text"}, {"cql2-json", "CQL2 JSON"}} {
		if conforms(conformsTo, lang[0]) {
			filters, cql = append(filters, lang[1]), true
		}
	}
	if !cql && conforms(conformsTo, "#filter") {
		filters = append(filters, "CQL2")
	}
	return paging, filters, conforms(conformsTo, "#sort")
}

func conforms(classes []string, part string) bool {
	for _, c := range classes {
		if strings.Contains(c, part) {
			return true
		}
	}
	return false
}

// stacCollections reads the API's collections (the first page of /collections).
func stacCollections(ctx context.Context, env *tasks.Env, root string, links []Link) ([]collection, error) {
	u := strings.TrimRight(root, "/") + "/collections"
	for _, l := range links {
		if l.Rel == "data" && l.Href != "" {
			u = l.Href
		}
	}
	r, err := probe.Get(ctx, env, "inspect", u, "application/json", nil)
	if err != nil {
		return nil, fmt.Errorf("asking %s for its collections: %w", redact.URL(u), err)
	}
	if !r.OK() {
		return nil, fmt.Errorf("asking %s for its collections: HTTP %d", redact.URL(u), r.Status)
	}
	var doc struct {
		Collections []collection `json:"collections"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		return nil, fmt.Errorf("reading the collections of %s: %w", redact.URL(u), err)
	}
	return doc.Collections, nil
}

// stacCount asks a collection's items for one (limit=1) and returns the count the
// server reports (numberMatched, or context.matched), -1 when it reports none, and the
// assets of that item.
func stacCount(ctx context.Context, env *tasks.Env, root string, c collection) (int64, []tasks.Field) {
	u := strings.TrimRight(root, "/") + "/collections/" + url.PathEscape(c.ID) + "/items"
	for _, l := range c.Links {
		if l.Rel == "items" && l.Href != "" {
			u = l.Href
		}
	}
	r, err := probe.Get(ctx, env, "inspect", ows.URL(u, [][2]string{{"limit", "1"}}), "application/geo+json, application/json", nil)
	if err != nil || !r.OK() {
		return -1, nil
	}
	var page struct {
		NumberMatched *int64 `json:"numberMatched"`
		Context       struct {
			Matched *int64 `json:"matched"`
		} `json:"context"`
		Features []Item `json:"features"`
	}
	if json.Unmarshal(r.Body, &page) != nil {
		return -1, nil
	}
	n := int64(-1)
	switch {
	case page.NumberMatched != nil:
		n = *page.NumberMatched
	case page.Context.Matched != nil:
		n = *page.Context.Matched
	}
	var assets []tasks.Field
	if len(page.Features) > 0 {
		for k, a := range page.Features[0].Assets {
			assets = append(assets, tasks.Field{Name: k, Type: a.Type})
		}
	}
	return n, assets
}

func sortFields(fs []tasks.Field) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
}
