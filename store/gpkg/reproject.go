package gpkg

import (
	"context"
	"fmt"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial/proj"
	"github.com/geoflow/geoflow/store"
)

// crsCode is the EPSG code spatial/proj knows a table's SRID by: 0 (unknown) is taken as
// lon/lat, as everywhere in this store.
func crsCode(srid int) int {
	if srid == 0 {
		return 4326
	}
	return srid
}

// transformer returns the spatial/proj transformer from EPSG code from to to (0 taken
// as lon/lat), or an error wrapping store.ErrNoTransform and proj.ErrUnsupported that
// names the codes this store can transform.
func transformer(from, to int) (*proj.Transformer, error) {
	tr, err := proj.New(crsCode(from), crsCode(to))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrNoTransform, err)
	}
	return tr, nil
}

// transform returns a copy of g converted from EPSG code from to to, where every other
// geometry conversion of this store goes through: writing a reprojected table, reading a
// table in lon/lat (toLonLat), and reading one in a chosen CRS. 0 is taken as lon/lat; a
// code spatial/proj does not support fails wrapping store.ErrNoTransform.
func transform(g orb.Geometry, from, to int) (orb.Geometry, error) {
	tr, err := transformer(from, to)
	if err != nil {
		return nil, err
	}
	return tr.Geometry(g)
}

// toLonLat returns g, in the CRS of EPSG code srid, in lon/lat: itself for lon/lat, a
// converted copy otherwise.
func toLonLat(g orb.Geometry, srid int) (orb.Geometry, error) {
	if lonLat(srid) {
		return g, nil
	}
	return transform(g, srid, 4326)
}

// lonLat tells the SRIDs whose coordinates are lon/lat as stored: 4326, and 0 (unknown,
// taken as lon/lat).
func lonLat(srid int) bool { return srid == 0 || srid == 4326 }

// canTransform tells whether this store can bring geometries of EPSG code srid to
// lon/lat and back.
func canTransform(srid int) bool {
	_, err := proj.Lookup(crsCode(srid))
	return err == nil
}

// writeTransformer is the transformer t's features are stored through: nil when they are
// stored as they arrive, else from t.SourceSRID to t.SRID.
func writeTransformer(t *store.FeatureTable) (*proj.Transformer, error) {
	if t.SourceSRID == 0 || t.SourceSRID == t.SRID {
		return nil, nil
	}
	tr, err := transformer(t.SourceSRID, t.SRID)
	if err != nil {
		return nil, fmt.Errorf("gpkg: storing %s in EPSG:%d (from EPSG:%d): %w", tableName(t.Schema, t.Name), t.SRID, t.SourceSRID, err)
	}
	return tr, nil
}

// areaWithin is areaIn's opposite: a box in the CRS of EPSG code srid lying wholly within
// the lon/lat area b, for asking which rows lie wholly inside b. It is areaIn's box for
// lon/lat and Web Mercator, where a box stays a box.
func areaWithin(srid int, b orb.Bound) (orb.Bound, error) {
	if lonLat(srid) || isMercator(srid) {
		return areaIn(srid, b)
	}
	tr, err := transformer(4326, srid)
	if err != nil {
		return b, err
	}
	return tr.InnerBound(b)
}

// geomSRIDProblem describes how an existing table's registered CRS differs from the one t
// is written in ("" when it does not, or when t has none).
func (s *Store) geomSRIDProblem(ctx context.Context, t *store.FeatureTable, name string) (string, error) {
	if t.SRID <= 0 {
		return "", nil
	}
	var srsID int64
	err := s.w.QueryRowContext(ctx, `SELECT coalesce((SELECT srs_id FROM gpkg_geometry_columns WHERE table_name = ? AND column_name = 'geom'), 0)`,
		name).Scan(&srsID)
	if err != nil {
		return "", translate(fmt.Sprintf("reading the CRS of %s", name), err)
	}
	code := int(srsID)
	if srsID > 0 {
		if err := s.w.QueryRowContext(ctx, `SELECT coalesce((SELECT organization_coordsys_id FROM gpkg_spatial_ref_sys
			WHERE srs_id = ? AND upper(organization) = 'EPSG'), ?)`, srsID, srsID).Scan(&code); err != nil {
			return "", translate(fmt.Sprintf("reading the CRS of %s", name), err)
		}
	}
	if code <= 0 || code == t.SRID {
		return "", nil
	}
	return fmt.Sprintf("its geometry column is in EPSG:%d, the task stores EPSG:%d (target.srs): transform the table or name its CRS", code, t.SRID), nil
}
