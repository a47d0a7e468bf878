package tasks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/paulmach/orb"
)

// Service is what a server offers and how it behaves, as `geoflow inspect URL` shows it
// and `geoflow validate --online` checks a task against: its layers (feature types,
// collections, tile sets, imagery layers), what each holds, and what the server says of
// paging, filters, sorting and its quota.
type Service struct {
	// Kind is the task type that harvests this service (`type:` in a flow).
	Kind string `json:"kind"`
	// Protocol names what the server speaks, with its version where it has one
	// ("WFS 2.0.0", "OGC API - Features", "ArcGIS FeatureServer 11.1", "WMS 1.3.0").
	Protocol string `json:"protocol"`
	// URL is the service's URL with secrets redacted.
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	// Layers are what the service offers, in the server's order.
	Layers []Layer `json:"layers"`
	// Paging is how the server pages ("startIndex and count", "next links",
	// "resultOffset and resultRecordCount"), "" when it does not.
	Paging string `json:"paging,omitempty"`
	// MaxPage is the most features (or items) one response holds, as the server
	// advertises it; 0 when it does not say.
	MaxPage int `json:"max_page,omitempty"`
	// Filters are the filter languages the server evaluates ("bbox", "CQL2 text",
	// "FES 2.0", "SQL where").
	Filters []string `json:"filters,omitempty"`
	// Sorting tells whether the server sorts on request (sortBy, orderByFields).
	Sorting bool `json:"sorting"`
	// CRSs are the coordinate reference systems offered for the whole service.
	CRSs []string `json:"crs,omitempty"`
	// RateLimit are the quota headers the server sent (Retry-After, X-RateLimit-*,
	// RateLimit, RateLimit-Policy), with their values, in the order received.
	RateLimit []Header `json:"rate_limit,omitempty"`
	// Notes are what a user should know that fits no field above (a layer whose count
	// the server would not give, an extent missing).
	Notes []string `json:"notes,omitempty"`
}

// Layer is one thing a service offers to harvest.
type Layer struct {
	// Name is what a flow names it by (typename, collection id, layer id).
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
	// Geometry is the layer's geometry type as the server declares it ("" unknown).
	Geometry string  `json:"geometry,omitempty"`
	Fields   []Field `json:"fields,omitempty"`
	// Count is the number of features (or items) the server reports; -1 when it
	// reports none.
	Count int64 `json:"count"`
	// Extent is the layer's advertised extent in longitude and latitude; nil when the
	// server advertises none.
	Extent *orb.Bound `json:"extent,omitempty"`
	// CRSs are the layer's coordinate reference systems, the default first.
	CRSs []string `json:"crs,omitempty"`
	// Zooms are a tile or imagery layer's zoom levels ("0-14"), "" for features.
	Zooms string `json:"zooms,omitempty"`
	// Formats are the output formats the layer is served in.
	Formats []string `json:"formats,omitempty"`
	// TileMatrixSets are a WMTS layer's tile matrix sets.
	TileMatrixSets []string `json:"tile_matrix_sets,omitempty"`
	// Template is the URL template a tiles task fetches the layer's tiles by, with its
	// secrets redacted; "" for layers fetched otherwise.
	Template string `json:"template,omitempty"`
	// Assets are the files each item of a STAC collection offers (item_assets, or
	// those of one item), by key, with their media type as Type.
	Assets []Field `json:"assets,omitempty"`
}

// Field is one attribute of a layer and its type as the server declares it.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Header is one response header and its value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Online is implemented by configs whose task can be resolved against its server
// without fetching any feature (`geoflow validate --online`): that its layer exists,
// that the server supports the filter, srs and properties the task asks for, and that
// the task's bbox meets the layer's advertised extent (CheckExtent). Problems found are
// reported through p at the key they concern; the error is for a server that could not
// be asked at all.
type Online interface {
	CheckOnline(ctx context.Context, env *Env, p Problems) error
}

// ExtentError is a task's area that does not meet its layer's advertised extent: the run
// would store nothing and call that complete.
type ExtentError struct {
	Layer   string
	Area    orb.Bound // the task's area, as configured (lon/lat expected)
	Extent  orb.Bound // the layer's advertised extent, lon/lat
	Swapped bool      // the area with its axes swapped would meet the extent
}

func (e *ExtentError) Error() string {
	msg := fmt.Sprintf("bbox %s does not meet the extent of layer %q, %s", fmtBound(e.Area), e.Layer, fmtBound(e.Extent))
	if e.Swapped {
		msg += " (longitude and latitude swapped?)"
	}
	return msg
}

// CheckExtent decides whether a task's area may hold any of a layer's features, from the
// extent the server advertises for the layer. It returns nil when the two meet (an edge
// or a corner is enough: servers round their extents) and an *ExtentError otherwise,
// saying whether the area with longitude and latitude swapped would have met it. An
// empty extent (the server advertises none, or a degenerate one of a layer with no
// features at all) is no evidence against the area and passes.
//
// An extent whose west edge is east of its east edge crosses the antimeridian (OGC API
// and WFS allow it: New Zealand with its islands is 166,-48,-176,-34): it is the two
// boxes either side of 180°.
func CheckExtent(layer string, area, extent orb.Bound) error {
	if extent == (orb.Bound{}) || meets(area, extent) {
		return nil
	}
	swapped := orb.Bound{Min: orb.Point{area.Min[1], area.Min[0]}, Max: orb.Point{area.Max[1], area.Max[0]}}
	return &ExtentError{Layer: layer, Area: area, Extent: extent, Swapped: meets(swapped, extent)}
}

// meets tells whether area meets extent, an extent crossing the antimeridian taken as
// its two halves.
func meets(area, extent orb.Bound) bool {
	if extent.Min[0] <= extent.Max[0] {
		return area.Intersects(extent)
	}
	east := orb.Bound{Min: extent.Min, Max: orb.Point{180, extent.Max[1]}}
	west := orb.Bound{Min: orb.Point{-180, extent.Min[1]}, Max: extent.Max}
	return area.Intersects(east) || area.Intersects(west)
}

// IsExtentError tells whether err is, or wraps, an *ExtentError.
func IsExtentError(err error) bool {
	var e *ExtentError
	return errors.As(err, &e)
}

// fmtBound writes a box's corners to 6 decimals (about 0.1 m), without trailing zeros.
func fmtBound(b orb.Bound) string {
	c := func(x float64) string { return strconv.FormatFloat(math.Round(x*1e6)/1e6, 'f', -1, 64) }
	return c(b.Min[0]) + "," + c(b.Min[1]) + "," + c(b.Max[0]) + "," + c(b.Max[1])
}
