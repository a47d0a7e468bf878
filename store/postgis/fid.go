package postgis

import "github.com/geoflow/geoflow/store"

// fidColumn is the name of t's integer primary key, which GDAL and QGIS take as the
// feature id: fid, as GeoPackage names it, unless the data has a property of that name,
// whose column keeps it (the key is then gf_fid). Migration 018 names the key it adds
// to older tables the same way.
func fidColumn(t *store.FeatureTable) string {
	for _, c := range t.Columns {
		if c.Name == "fid" {
			return "gf_fid"
		}
	}
	return "fid"
}

// fidDef is the definition of t's primary key column in CREATE TABLE: an identity, so
// that an INSERT, which never names it, numbers the rows.
func fidDef(t *store.FeatureTable) string {
	return fidColumn(t) + " bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
}
