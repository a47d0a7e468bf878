// The STAC documents a search returns: item collections, items, assets and
// links; the request of the next page, its href resolved against the
// current page's; and an item's bound and geometry.

package imagery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial/geojson"
)

// ItemCollection is the part of a STAC search response (a GeoJSON FeatureCollection of
// items) that the task reads.
type ItemCollection struct {
	Type     string `json:"type"`
	Features []Item `json:"features"`
	Links    []Link `json:"links"`
}

// Item is a STAC item.
type Item struct {
	ID         string           `json:"id"`
	Collection string           `json:"collection"`
	Geometry   json.RawMessage  `json:"geometry"`
	BBox       []float64        `json:"bbox"`
	Properties json.RawMessage  `json:"properties"`
	Assets     map[string]Asset `json:"assets"`
}

// Asset is one file of an item.
type Asset struct {
	Href     string `json:"href"`
	Type     string `json:"type"`
	Checksum string `json:"file:checksum"`
	Size     int64  `json:"file:size"`
}

// Link is a STAC link; a search's next link may be a POST with a body to send (merged
// into the previous body when Merge is set), as the STAC API's item search specifies.
type Link struct {
	Rel     string            `json:"rel"`
	Href    string            `json:"href"`
	Method  string            `json:"method"`
	Body    json.RawMessage   `json:"body"`
	Merge   bool              `json:"merge"`
	Headers map[string]string `json:"headers"`
}

// ParseItemCollection decodes a search response, refusing what is not a
// FeatureCollection of items with ids.
func ParseItemCollection(r io.Reader) (*ItemCollection, error) {
	var ic ItemCollection
	if err := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&ic); err != nil {
		return nil, fmt.Errorf("not a STAC item collection: %w", err)
	}
	if ic.Type != "FeatureCollection" {
		return nil, fmt.Errorf("not a STAC item collection: type %q", ic.Type)
	}
	for i, it := range ic.Features {
		if it.ID == "" {
			return nil, fmt.Errorf("item %d has no id", i)
		}
		if len(it.BBox) != 0 && len(it.BBox) != 4 && len(it.BBox) != 6 {
			return nil, fmt.Errorf("item %q: bbox has %d values", it.ID, len(it.BBox))
		}
	}
	return &ic, nil
}

// nextPage returns the request of the page after cur, or nil at the end.
func nextPage(ic *ItemCollection, cur pageSpec) *pageSpec {
	if len(ic.Features) == 0 {
		return nil // a next link on an empty page would loop
	}
	for _, l := range ic.Links {
		if l.Rel != "next" || l.Href == "" {
			continue
		}
		next := &pageSpec{Method: cmpOr(strings.ToUpper(l.Method), http.MethodGet), Href: l.Href, Headers: l.Headers}
		if base, err := url.Parse(cur.Href); err == nil {
			if h, err := base.Parse(l.Href); err == nil {
				next.Href = h.String()
			}
		}
		if next.Method == http.MethodPost {
			next.Body = l.Body
			if l.Merge {
				next.Body = mergeJSON(cur.Body, l.Body)
			}
		}
		if next.Method == cur.Method && next.Href == cur.Href && bytes.Equal(next.Body, cur.Body) {
			return nil // the same request again: the server's paging is broken
		}
		return next
	}
	return nil
}

// mergeJSON overlays the members of b onto a (both JSON objects).
func mergeJSON(a, b json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(a, &m)
	var o map[string]json.RawMessage
	if json.Unmarshal(b, &o) == nil {
		for k, v := range o {
			m[k] = v
		}
	}
	out, _ := json.Marshal(m)
	return out
}

func itemBound(it Item) *orb.Bound {
	switch len(it.BBox) {
	case 4:
		return &orb.Bound{Min: orb.Point{it.BBox[0], it.BBox[1]}, Max: orb.Point{it.BBox[2], it.BBox[3]}}
	case 6:
		return &orb.Bound{Min: orb.Point{it.BBox[0], it.BBox[1]}, Max: orb.Point{it.BBox[3], it.BBox[4]}}
	}
	if g := geometry(it.Geometry); g != nil {
		b := g.Bound()
		return &b
	}
	return nil
}

// geometry decodes an item's GeoJSON geometry; nil when it has none or it is invalid.
func geometry(raw json.RawMessage) orb.Geometry {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	doc := append(append([]byte(`{"type":"Feature","properties":{},"geometry":`), raw...), '}')
	f, err := geojson.NewReader(bytes.NewReader(doc), geojson.Options{}).Next()
	if err != nil || f == nil {
		return nil
	}
	return f.Geometry
}
