package wfsserver

// flavor holds one server product's observable quirks. Each field names its
// source; the package comment summarises them.
type flavor struct {
	name      string
	prefix    string
	namespace string
	versions  []string

	// exceptions200: MapServer answers OGC exception reports with HTTP 200
	// (geomoose/gm3#254 "MapServer always returns a 200", EOxServer#9; only
	// WMS got an opt-in MS_WMS_ERROR_STATUS_CODE, MapServer PR #7191).
	exceptions200 bool
	// numberMatchedUnknown: MapServer computes numberMatched only when the
	// map sets wfs_compute_number_matched=true (MapServer PR #5836); by
	// default GetFeature results say numberMatched="unknown".
	numberMatchedUnknown bool
	// featureMemberEach: GML 3.1.1 wraps each feature in gml:featureMember
	// (MapServer) instead of one gml:featureMembers (GeoServer).
	featureMemberEach bool
	// nextNeedsStartIndex: GeoServer adds next only when the request has
	// STARTINDEX as well as COUNT (halestudio/hale#286).
	nextNeedsStartIndex bool
	// previous: GeoServer and deegree also write a previous link (deegree
	// PR #619: "the response contains @next and @previous").
	previous bool
	// nextOnHits: deegree sets next on resultType=hits to the first page, as
	// WFS 2.0 7.7.4.2 asks (deegree PR #777).
	nextOnHits bool
	// geojsonFollowsSRS: GeoServer writes GeoJSON coordinates in the axis
	// order of a requested URN CRS (lat/lon) and names it in a "crs" member
	// (docs/field-notes.md: "some servers write the requested CRS's axis order into
	// GeoJSON when asked with a URN CRS").
	geojsonFollowsSRS bool
	// geojsonCountsLast: GeoServer's GeoJSON carries totalFeatures,
	// numberMatched and numberReturned after the features array (GEOS-7233).
	geojsonCountsLast bool
	// defaultMaxFeaturesConstraint: MapServer advertises wfs_maxfeatures in
	// WFS 1.1 capabilities as ows:Constraint DefaultMaxFeatures (Tom Kralidis,
	// mapserver-users, msg11447).
	defaultMaxFeaturesConstraint bool
	// noCountDefault: QGIS Server implements WFS 1.0/1.1 only and advertises
	// no page size (docs.qgis.org server_manual/services/wfs).
	noCountDefault bool
	// jsonFormats are the output format names taken as GeoJSON, first is
	// advertised.
	jsonFormats []string
}

var allVersions = []string{"2.0.0", "1.1.0", "1.0.0"}

var flavors = map[string]flavor{
	FlavorGeoServer: {
		name: FlavorGeoServer, prefix: "gf", namespace: "https://geoflow.dev/ns/gf",
		versions: allVersions, nextNeedsStartIndex: true, previous: true,
		geojsonFollowsSRS: true, geojsonCountsLast: true,
		jsonFormats: []string{"application/json", "json"},
	},
	FlavorMapServer: {
		// MapServer's GML names features in the ms: prefix with its fixed
		// namespace (mapserver.org/ogc/wfs_server.html).
		name: FlavorMapServer, prefix: "ms", namespace: "http://mapserver.gis.umn.edu/mapserver",
		versions: allVersions, exceptions200: true, numberMatchedUnknown: true,
		featureMemberEach: true, defaultMaxFeaturesConstraint: true,
		jsonFormats: []string{"application/json; subtype=geojson", "geojson", "application/json"},
	},
	FlavorDeegree: {
		name: FlavorDeegree, prefix: "gf", namespace: "https://geoflow.dev/ns/gf",
		versions: allVersions, previous: true, nextOnHits: true,
		jsonFormats: []string{"application/geo+json", "application/json"},
	},
	FlavorQGIS: {
		// QGIS Server: WFS 1.0.0 and 1.1.0 only, 1.1.0 when VERSION is
		// absent; STARTINDEX is a QGIS extension to 1.0/1.1 (QGIS 2.14
		// changelog entry 410), so paging works without WFS 2.0.
		name: FlavorQGIS, prefix: "qgs", namespace: "http://www.qgis.org/gml",
		versions: []string{"1.1.0", "1.0.0"}, featureMemberEach: true, noCountDefault: true,
		jsonFormats: []string{"application/vnd.geo+json", "GeoJSON", "application/json"},
	},
}
