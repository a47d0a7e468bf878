package imagery

import (
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

// TestStacAbilities: paging, filter languages and sorting come from the conformance
// classes an API declares, nothing else.
func TestStacAbilities(t *testing.T) {
	tests := []struct {
		name    string
		classes []string
		paging  string
		filters string
		sorting bool
	}{
		{name: "core only", classes: []string{"https://api.stacspec.org/v1.0.0/core"}},
		{name: "item search", classes: []string{"https://api.stacspec.org/v1.0.0/item-search"}, paging: "next links", filters: "bbox,datetime"},
		{name: "filter, sort, query", classes: []string{"https://api.stacspec.org/v1.0.0/item-search",
			"https://api.stacspec.org/v1.0.0-rc.2/item-search#filter", "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
			"https://api.stacspec.org/v1.0.0/item-search#sort", "https://api.stacspec.org/v1.0.0/item-search#query"},
			paging: "next links", filters: "bbox,datetime,query,CQL2 text", sorting: true},
		{name: "filter without a language class", classes: []string{"https://api.stacspec.org/v1.0.0/item-search", "https://api.stacspec.org/v1.0.0-rc.1/item-search#filter"},
			paging: "next links", filters: "bbox,datetime,CQL2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paging, filters, sorting := stacAbilities(tt.classes)
			if paging != tt.paging || strings.Join(filters, ",") != tt.filters || sorting != tt.sorting {
				t.Fatalf("= %q %q %v", paging, filters, sorting)
			}
		})
	}
}

// TestSnippetResolution: the resolution a snippet picks keeps the first run to about
// snippetChips chips, rounded up to 1, 2 or 5 times a power of ten.
func TestSnippetResolution(t *testing.T) {
	tests := []struct {
		name string
		ext  orb.Bound
		crs  string
		side int
		want float64
	}{
		{name: "a city in web mercator", ext: orb.Bound{Min: orb.Point{11.3, 47.9}, Max: orb.Point{11.8, 48.3}}, crs: "EPSG:3857", side: 512, want: 50},
		{name: "degrees", ext: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}, crs: "EPSG:4326", side: 2048, want: 0.0002},
		{name: "world", ext: world, crs: "EPSG:3857", side: 2048, want: 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := snippetResolution(tt.ext, tt.crs, tt.side); got != tt.want {
				t.Fatalf("= %g, want %g", got, tt.want)
			}
		})
	}
}

// TestLayersExtent: several layers are checked against the union of their extents; one
// layer advertising none lets any area pass.
func TestLayersExtent(t *testing.T) {
	a := &orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}
	b := &orb.Bound{Min: orb.Point{10, 10}, Max: orb.Point{11, 11}}
	tests := []struct {
		name   string
		area   orb.Bound
		layers []wmsLayer
		fails  bool
	}{
		{name: "meets the first", area: orb.Bound{Min: orb.Point{0.5, 0.5}, Max: orb.Point{0.6, 0.6}}, layers: []wmsLayer{{Extent: a}, {Extent: b}}},
		{name: "in the union's gap", area: orb.Bound{Min: orb.Point{5, 5}, Max: orb.Point{6, 6}}, layers: []wmsLayer{{Extent: a}, {Extent: b}}},
		{name: "outside", area: orb.Bound{Min: orb.Point{20, 20}, Max: orb.Point{21, 21}}, layers: []wmsLayer{{Extent: a}, {Extent: b}}, fails: true},
		{name: "one without extent", area: orb.Bound{Min: orb.Point{20, 20}, Max: orb.Point{21, 21}}, layers: []wmsLayer{{Extent: a}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := layersExtent("l", tt.area, tt.layers); (err != nil) != tt.fails {
				t.Fatalf("err = %v, want failure %v", err, tt.fails)
			}
		})
	}
}
