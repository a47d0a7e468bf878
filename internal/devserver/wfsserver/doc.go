// Package wfsfixture is a small but real WFS server over deterministically
// generated cadastral parcels, for tests (via httptest.NewServer), demos
// (geoflow dev wfs) and benchmarks up to millions of features. GDAL's WFS
// driver reads it.
//
// Parcels are laid out on a grid over Options.Extent and recomputed from
// (Seed, index) on every request: nothing is stored per feature, and a BBOX
// finds its candidates from the grid-cell range. Parcel i is parcel_id
// "GF-%08d" and gml:id "<typename>.<i>", so parcel_id order is index order.
// Responses are streamed as they are generated. Tests mount a Server with
// httptest.NewServer; `geoflow dev wfs` uses Server.ListenAndServe.
//
// The server speaks WFS 2.0.0, 1.1.0 and 1.0.0 over KVP GET (and GetFeature
// as XML POST): GetCapabilities, DescribeFeatureType and GetFeature with
// TYPENAMES/TYPENAME, BBOX (optional fifth value CRS), FILTER (a BBOX and/or
// resource ids), RESOURCEID/FEATUREID, SRSNAME, COUNT/MAXFEATURES capped by
// CountDefault, STARTINDEX, RESULTTYPE=hits, SORTBY (parcel_id) and
// OUTPUTFORMAT (GML 3.2, GML 3.1.1, GML2, GeoJSON).
//
// Axis order follows the names: urn:ogc:def:crs:EPSG::4326 and
// http://www.opengis.net/def/crs/EPSG/0/4326 mean lat,lon; EPSG:4326, the
// GML2 srs URL and CRS84 mean lon,lat. A BBOX without a CRS is in the default
// CRS of the version: lat,lon in 2.0 and 1.1, lon,lat in 1.0.
//
// Flavors reproduce what real servers do, with sources:
//
//   - geoserver (default): numberMatched is "unknown" only when the layer's
//     "Skip numberMatched" is on (Options.SkipNumberMatched; hits still count;
//     Andrea Aime on geoserver-users, Oct 2018, mail-archive msg30742). A next
//     link only when STARTINDEX was sent with COUNT (halestudio/hale#286),
//     plus previous. GeoJSON puts totalFeatures/numberMatched after the
//     features (GEOS-7233) and, asked with a URN srsName, writes lat/lon with
//     a "crs" member (docs/field-notes.md). GML2 collections are bounded by
//     gml:null "unknown"; GML 3.1.1 uses one gml:featureMembers.
//   - mapserver: ms: prefix in http://mapserver.gis.umn.edu/mapserver, GML2 by
//     default for 1.0 and 1.1 (mapserver.org/ogc/wfs_server.html),
//     gml:featureMember per feature, exception reports with HTTP 200
//     (geomoose/gm3#254, EOxServer#9), numberMatched="unknown" because
//     wfs_compute_number_matched defaults to off (MapServer PR #5836), and a
//     DefaultMaxFeatures constraint in 1.1 capabilities (mapserver-users
//     msg11447).
//   - deegree: numberMatched always computed, next and previous links (deegree3
//     PR #619; deegree enables paging by configuration, assumed on here), and
//     next on resultType=hits pointing at the first page (deegree3 PR #777).
//   - qgis: WFS 1.1.0 and 1.0.0 only, 1.1.0 when VERSION is absent
//     (docs.qgis.org server_manual/services/wfs), qgs: prefix in
//     http://www.qgis.org/gml, STARTINDEX honoured in 1.0/1.1 as a QGIS
//     extension (QGIS 2.14 changelog entry 410), no CountDefault advertised.
//
// Misbehaviour is switched on by Options: UnstableOrder (offset paging loses
// about 1.5% without SORTBY), Quota (429, Retry-After, X-RateLimit-* or IETF
// RateLimit headers), Faults (5xx, truncated bodies, exception reports and
// proxy HTML pages with 200, URLs that fail forever) and Latency.
//
// The data can change between two harvests: Options.Changes names how many
// parcels are edited, deleted and added between revision 0 and 1, and
// Server.SetRevision switches revisions while the server runs (see Changes for
// which parcels). Server.SetEmpty makes every query answer an empty collection,
// as a misconfigured server does. ControlHandler offers both over HTTP for
// `geoflow dev`.
package wfsserver
