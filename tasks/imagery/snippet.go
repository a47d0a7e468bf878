package imagery

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/tasks"
)

// snippetChips is about how many chips a snippet's WMS task fetches over its layer's
// extent: a first run that shows the layer works, not a harvest.
const snippetChips = 16

// world is the extent a snippet uses for a layer that advertises none.
var world = orb.Bound{Min: orb.Point{-180, -85}, Max: orb.Point{180, 85}}

// Snippet implements tasks.Kind.Snippet: a flow with one imagery task harvesting layer
// of s (a WMS layer, or a STAC collection) over the layer's advertised extent.
func Snippet(s *tasks.Service, layer string) (string, error) {
	l, err := s.FindLayer(layer)
	if err != nil {
		return "", err
	}
	ext := world
	if l.Extent != nil {
		ext = *l.Extent
	}
	id := flowID(layer)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %s of %s, as geoflow inspect described it.\n", map[bool]string{true: "Collection", false: "Layer"}[isSTAC(s)], q(layer), s.URL)
	fmt.Fprintf(&b, "name: %s\ntasks:\n  %s:\n    type: imagery\n", id, id)
	if isSTAC(s) {
		writeSTAC(&b, s, l)
	} else {
		writeWMS(&b, s, l, ext)
	}
	fmt.Fprintf(&b, "    bbox: [%g, %g, %g, %g]\n", ext.Min[0], ext.Min[1], ext.Max[0], ext.Max[1])
	fmt.Fprintf(&b, "    target:\n      dir: ./imagery/%s\n      table: public.%s\n", id, id)
	return b.String(), nil
}

func isSTAC(s *tasks.Service) bool { return strings.HasPrefix(s.Protocol, "STAC") }

// writeSTAC writes the stac section: the collection, and the asset to fetch (visual when
// offered, else the first image).
func writeSTAC(b *strings.Builder, s *tasks.Service, l *tasks.Layer) {
	asset := ""
	for _, a := range l.Assets {
		if a.Name == "visual" || (asset == "" && strings.HasPrefix(a.Type, "image/")) {
			asset = a.Name
		}
	}
	if asset == "" && len(l.Assets) > 0 {
		asset = l.Assets[0].Name
	}
	fmt.Fprintf(b, "    stac:\n      url: %s\n      collections: [%s]\n", q(s.URL), q(l.Name))
	if asset != "" {
		fmt.Fprintf(b, "      assets: [%s]\n", q(asset))
	}
	if l.Count > 0 {
		fmt.Fprintf(b, "    # %d items in the whole collection: narrow bbox, or add stac.datetime, before a large one.\n", l.Count)
	}
}

// writeWMS writes the wms section with a resolution coarse enough for about
// snippetChips chips over ext.
func writeWMS(b *strings.Builder, s *tasks.Service, l *tasks.Layer, ext orb.Bound) {
	crs := "EPSG:3857"
	if !offers(l.CRSs, "EPSG:3857") && offers(l.CRSs, "EPSG:4326") {
		crs = "EPSG:4326"
	}
	side := 2048
	if s.MaxPage > 0 {
		side = min(side, int(math.Sqrt(float64(s.MaxPage))))
	}
	res := snippetResolution(ext, crs, side)
	version := strings.TrimPrefix(s.Protocol, "WMS ")
	fmt.Fprintf(b, "    wms:\n      url: %s\n      layers: %s\n      format: auto\n      crs: %s\n", q(baseURL(s.URL)), q(l.Name), crs)
	if version == "1.1.1" {
		fmt.Fprintf(b, "      version: \"1.1.1\"\n")
	}
	fmt.Fprintf(b, "      # Coarse, for a first run of about %d chips over the layer's extent: lower it for\n", snippetChips)
	fmt.Fprintf(b, "      # detail (each halving quadruples the chips).\n      resolution: %g\n", res)
}

// snippetResolution is the finest 1-2-5 resolution (in crs units) at which ext takes at
// most about snippetChips chips of side pixels.
func snippetResolution(ext orb.Bound, crs string, side int) float64 {
	w, h := ext.Max[0]-ext.Min[0], ext.Max[1]-ext.Min[1]
	if crs == "EPSG:3857" {
		lo, hi := project.WGS84.ToMercator(ext.Min), project.WGS84.ToMercator(ext.Max)
		w, h = hi[0]-lo[0], hi[1]-lo[1]
	}
	per := math.Sqrt(snippetChips)
	return niceCeil(math.Max(w, h) / (per * float64(side)))
}

// niceCeil is the smallest of 1, 2 and 5 times a power of ten that is at least x.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v := m * p; v >= x*(1-1e-9) {
			return v
		}
	}
	return 10 * p
}

// offers tells whether crss hold crs, or an alias of it.
func offers(crss []string, crs string) bool {
	for _, c := range crss {
		c = strings.ToUpper(c)
		if c == crs || (crs == "EPSG:3857" && c == "EPSG:900913") || (crs == "EPSG:4326" && c == "CRS:84") {
			return true
		}
	}
	return false
}

// baseURL is a WMS capabilities URL without the parameters a task sets itself.
func baseURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	v := pu.Query()
	for k := range v {
		switch strings.ToUpper(k) {
		case "SERVICE", "REQUEST", "VERSION":
			v.Del(k)
		}
	}
	pu.RawQuery = v.Encode()
	return pu.String()
}

var notID = regexp.MustCompile(`[^a-z0-9_]+`)

// flowID makes a flow and task id of a layer name ([a-z0-9_]+).
func flowID(name string) string {
	id := strings.Trim(notID.ReplaceAllString(strings.ToLower(name), "_"), "_")
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		id = strings.TrimSuffix("imagery_"+id, "_") // table names start with a letter
	}
	return id
}

// q quotes s for YAML (a JSON string is a YAML double-quoted scalar).
func q(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
