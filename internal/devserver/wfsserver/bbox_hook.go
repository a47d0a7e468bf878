package wfsserver

import (
	"net/http"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// RequestBBox returns the lon/lat BBOX of a WFS request, reading lat/lon order where the
// CRS says so; ok is false when there is none. Fault hooks (Faults.FailForever) use it
// to fail an area.
func RequestBBox(r *http.Request) (orb.Bound, bool) {
	v := ""
	for k, vs := range r.URL.Query() {
		if strings.EqualFold(k, "BBOX") && len(vs) > 0 {
			v = vs[0]
		}
	}
	if v == "" {
		return orb.Bound{}, false
	}
	b, crs, err := spatial.ParseBBoxCRS(v)
	if err != nil {
		return orb.Bound{}, false
	}
	if strings.Contains(crs, "urn:ogc:def:crs:EPSG::4326") {
		b = orb.Bound{Min: orb.Point{b.Min[1], b.Min[0]}, Max: orb.Point{b.Max[1], b.Max[0]}}
	}
	return b, true
}
