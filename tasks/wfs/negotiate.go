package wfs

import (
	"fmt"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// The decisions prepare takes from the configuration and what the server advertised.
// Each is a pure function, so that what the task will ask for can be read (and tested)
// apart from the requests that learn it.

// chooseVersion decides the WFS version spoken: the configured one, unless it is "auto"
// or unset, when it is the one the server answered GetCapabilities in.
func chooseVersion(configured, advertised string) string {
	if configured != "auto" && configured != "" {
		return configured
	}
	return advertised
}

// srsName decides the SRSNAME value for the stored srid. GeoJSON is lon/lat (RFC 7946),
// but servers asked with a URN CRS write its latitude-first order into GeoJSON (GeoServer
// does); the short form keeps them to x/y, and the first coordinates are still checked
// against the box. GML in 1.1 and 2.0 gets the URN form, whose axis order is unambiguous
// (latitude-first for geographic CRSs by definition), where "EPSG:4326" means different
// things to different servers. WFS 1.0 sends no SRSNAME: the configured value is kept.
func srsName(configured string, srid int, version string, geoJSON bool) string {
	switch {
	case geoJSON:
		return fmt.Sprintf("EPSG:%d", srid)
	case version != "1.0.0":
		return urnCRS(srid)
	}
	return configured
}

// harvestArea decides the lon/lat area harvested: the configured bbox (in bboxCRS,
// EPSG:3857 converted), else the feature type's advertised WGS84 extent, when advertised
// reports so. Without either there is nothing to harvest.
func harvestArea(bbox *[4]float64, bboxCRS string, ft *FeatureType) (area orb.Bound, advertised bool, err error) {
	switch {
	case bbox != nil:
		b := *bbox
		area = orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
		if strings.EqualFold(bboxCRS, "EPSG:3857") {
			area = mercatorToLonLat(area)
		}
		return area, false, nil
	case ft.WGS84 != nil:
		return *ft.WGS84, true, nil
	}
	return orb.Bound{}, false, fmt.Errorf("no bbox given and the server advertises no extent for %q: set bbox", ft.Name)
}

// checkFilter refuses a filter the server declares it cannot evaluate. Such a server
// ignores what it cannot evaluate and answers every feature of the tile: the harvest
// would look complete and hold the wrong features.
func checkFilter(filter string, caps *Capabilities) error {
	if filter != "" && caps.NoStandardFilter {
		return fmt.Errorf("filter: the server declares it cannot evaluate comparison and logical filters (ImplementsMinStandardFilter is false), so it would ignore the filter and answer every feature; remove filter: or use another server")
	}
	return nil
}

// sortProperty decides the property pages are sorted by: the configured one, else the
// property of the key's first column, else the type's first property; "" when there is
// none.
func sortProperty(configured string, key []string, cols []store.Column, props []Property) string {
	sortBy := configured
	if sortBy == "" && len(key) > 0 {
		for _, c := range cols {
			if c.Name == key[0] {
				sortBy = c.Property
			}
		}
	}
	if sortBy == "" && len(props) > 0 {
		sortBy = props[0].Name
	}
	return sortBy
}

// pageSize decides the features asked for per request: the server's CountDefault
// (defaultPageSize when it advertises none), or the configured page size where that is
// smaller, or where the server advertises no CountDefault.
func pageSize(countDefault, configured int) int64 {
	ps := int64(defaultPageSize)
	if countDefault > 0 {
		ps = int64(countDefault)
	}
	if configured > 0 && (countDefault == 0 || int64(configured) < ps) {
		ps = int64(configured)
	}
	return ps
}
