// Package spatial holds geoflow's geometry plumbing on top of
// github.com/paulmach/orb: the Feature and Reader types that the format
// subpackages (spatial/gml, spatial/geojson) produce while streaming a WFS
// GetFeature response, the errors those readers return, CRS axis-order rules,
// bbox parsing and tiling for adaptive harvesting, and the canonical payload
// hash that deduplicates features delivered more than once.
//
// Nothing in this package performs I/O on its own or keeps package-level
// mutable state; every function is safe for concurrent use.
package spatial
