package gpkg

//go:generate bash gen_srs.sh

import (
	"math"
	"strconv"
	"strings"
)

// spatialRef is one row of gpkg_spatial_ref_sys. ID is the srs_id that geometry blobs,
// gpkg_contents and gpkg_geometry_columns refer to. An empty Description stands for
// NULL, which is what GDAL writes for every row but the three required ones.
type spatialRef struct {
	Name         string // srs_name
	ID           int32  // srs_id
	Organization string // organization, "EPSG" or "NONE"
	OrgID        int32  // organization_coordsys_id
	Definition   string // definition: OGC WKT 1, or "undefined"
	Description  string // description
}

// The rows every GeoPackage must have (12-128r18 requirement 11) are spelled as GDAL
// writes them: the spec fixes srs_id, organization, organization_coordsys_id and
// definition; GDAL and the other writers agree on the names and descriptions.

func undefinedCartesianRef() spatialRef {
	return spatialRef{
		Name: "Undefined Cartesian SRS", ID: -1, Organization: "NONE", OrgID: -1,
		Definition: "undefined", Description: "undefined Cartesian coordinate reference system",
	}
}

func undefinedGeographicRef() spatialRef {
	return spatialRef{
		Name: "Undefined geographic SRS", ID: 0, Organization: "NONE", OrgID: 0,
		Definition: "undefined", Description: "undefined geographic coordinate reference system",
	}
}

// requiredRefs returns the three rows every GeoPackage must have: EPSG:4326 with its WKT,
// -1 for undefined Cartesian and 0 for undefined geographic coordinates. The slice is
// new on every call; the caller may keep or change it.
func requiredRefs() []spatialRef {
	wgs84, _ := spatialRefFor(4326)
	return []spatialRef{wgs84, undefinedCartesianRef(), undefinedGeographicRef()}
}

// spatialRefFor returns the gpkg_spatial_ref_sys row for EPSG code srid, and whether
// geoflow knows its definition. 0 and -1 give the required undefined geographic and
// Cartesian rows. The CRSs in gen_srs.sh (4326 and other common geographic ones, Web
// Mercator, national grids, the ETRS89, WGS 84 and NAD83 UTM zones) carry the OGC WKT 1
// that GDAL writes, named as GDAL names them.
//
// Any other positive code gives organization EPSG, organization_coordsys_id and srs_id
// srid, definition "undefined", and known false, so the caller may log it. The spec asks
// for WKT there, but GDAL reads a row whose organization is EPSG and whose
// organization_coordsys_id equals its srs_id from its own EPSG database before it looks
// at the definition (GDALGeoPackageDataset::GetSpatialRef), and so resolves such a row
// completely; GDAL itself writes "undefined" for CRSs it has no WKT 1 for.
//
// A srid that cannot be an EPSG code (below -1, above MaxInt32) gives the undefined
// Cartesian row and known false: callers must use ref.ID as the srs_id they write.
func spatialRefFor(srid int) (ref spatialRef, known bool) {
	switch {
	case srid == 0:
		return undefinedGeographicRef(), true
	case srid == -1:
		return undefinedCartesianRef(), true
	case srid < -1 || srid > math.MaxInt32:
		return undefinedCartesianRef(), false
	}
	def, ok := gdalDefinition(srid)
	if !ok {
		return spatialRef{
			Name: "EPSG:" + strconv.Itoa(srid), ID: int32(srid), Organization: "EPSG",
			OrgID: int32(srid), Definition: "undefined",
		}, false
	}
	if srid == 4326 {
		return spatialRef{
			Name: "WGS 84 geodetic", ID: 4326, Organization: "EPSG", OrgID: 4326, Definition: def,
			Description: "longitude/latitude coordinates in decimal degrees on the WGS 84 spheroid",
		}, true
	}
	return spatialRef{Name: wktName(def), ID: int32(srid), Organization: "EPSG", OrgID: int32(srid), Definition: def}, true
}

// gdalDefinition returns GDAL's WKT 1 for a known EPSG code: stored whole, or expanded
// from its UTM family's template. The 141 UTM zones differ only in zone number, central
// meridian and code: four templates keep srs_table.go at 13 kB where the 155 definitions
// stored whole would take 115 kB, and gen_srs.sh checked every expansion against GDAL's
// text before writing them (srs_test.go checks again against their digests).
func gdalDefinition(code int) (string, bool) {
	if def, ok := storedDefinition(code); ok {
		return def, true
	}
	if tpl, zone, ok := utmTemplate(code); ok {
		return expandUTM(tpl, code, zone), true
	}
	return "", false
}

// expandUTM fills a UTM template: {ZONE} is the zone number, {CM} its central meridian
// (6 * zone - 183 degrees, an integer as GDAL prints it) and {CODE} the EPSG code.
// gen_srs.sh's expand does the same.
func expandUTM(tpl string, code, zone int) string {
	return strings.NewReplacer(
		"{ZONE}", strconv.Itoa(zone),
		"{CM}", strconv.Itoa(6*zone-183),
		"{CODE}", strconv.Itoa(code),
	).Replace(tpl)
}

// wktName returns the name of the CRS a WKT defines: its first quoted string, as GDAL
// uses for srs_name.
func wktName(wkt string) string {
	_, rest, ok := strings.Cut(wkt, `["`)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, `"`)
	return name
}
