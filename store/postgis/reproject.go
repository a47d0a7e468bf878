package postgis

import (
	"context"
	"fmt"
	"slices"

	"github.com/geoflow/geoflow/store"
)

// reprojects tells whether t's features arrive in another CRS than the one it stores
// (flows' target.srs), so that the write transforms them.
func reprojects(t *store.FeatureTable) bool {
	return t.SRID > 0 && t.SourceSRID > 0 && t.SourceSRID != t.SRID
}

// checkSRIDs makes sure PostGIS knows the CRSs a reprojecting table's features are
// transformed between, so that an unknown code fails the planning, not the first write.
func (s *Store) checkSRIDs(ctx context.Context, t *store.FeatureTable) error {
	if !reprojects(t) {
		return nil
	}
	var known []int32
	rows, err := s.pool.Query(ctx, "SELECT srid FROM spatial_ref_sys WHERE srid = ANY($1)", []int32{int32(t.SourceSRID), int32(t.SRID)})
	if err != nil {
		return translate("looking up the target's CRS in spatial_ref_sys", err)
	}
	defer rows.Close()
	for rows.Next() {
		var srid int32
		if err := rows.Scan(&srid); err != nil {
			return translate("looking up the target's CRS in spatial_ref_sys", err)
		}
		known = append(known, srid)
	}
	if err := rows.Err(); err != nil {
		return translate("looking up the target's CRS in spatial_ref_sys", err)
	}
	for _, code := range []int{t.SRID, t.SourceSRID} {
		if !slices.Contains(known, int32(code)) {
			return fmt.Errorf("postgis: storing %s in EPSG:%d (from EPSG:%d): EPSG:%d is not in the database's spatial_ref_sys, so PostGIS cannot transform to it",
				tableIdent(t), t.SRID, t.SourceSRID, code)
		}
	}
	return nil
}

// geomSRIDProblems describes how an existing table's geometry column's SRID differs from
// the one t is written in (none when it does not, or when the column has none).
func (s *Store) geomSRIDProblems(ctx context.Context, t *store.FeatureTable) ([]string, error) {
	if t.SRID <= 0 {
		return nil, nil
	}
	var srid int
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT postgis_typmod_srid(a.atttypmod)
		FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attname = 'geom' AND NOT a.attisdropped), 0)`, tableIdent(t)).Scan(&srid)
	if err != nil {
		return nil, translate(fmt.Sprintf("inspecting the geometry column of %s", tableIdent(t)), err)
	}
	if srid <= 0 || srid == t.SRID {
		return nil, nil
	}
	return []string{fmt.Sprintf("its geometry column is in EPSG:%d, the task stores EPSG:%d (target.srs): transform the table or name its CRS", srid, t.SRID)}, nil
}
