package postgis

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

var _ store.UnitLister = (*Store)(nil)

// ListUnits implements store.UnitLister: a run's units with their bbox, state, counts,
// and the id of their dead letter, for the web UI's map.
func (s *Store) ListUnits(ctx context.Context, f store.UnitFilter) ([]store.UnitRecord, int64, error) {
	conds := []string{"u.run_id = $1"}
	args := []any{f.RunID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Task != "" {
		conds = append(conds, "u.task = "+arg(f.Task))
	}
	if f.State != "" {
		conds = append(conds, "u.state = "+arg(string(f.State)))
	}
	if b := f.BBox; b != nil {
		conds = append(conds, fmt.Sprintf("ST_GeomFromEWKB(u.bbox) && ST_MakeEnvelope(%s, %s, %s, %s, 4326)", arg(b.Min[0]), arg(b.Min[1]), arg(b.Max[0]), arg(b.Max[1])))
	}
	w := " WHERE " + strings.Join(conds, " AND ")
	what := fmt.Sprintf("listing the units of run %d", f.RunID)
	var total int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM geoflow_units u"+w, args...).Scan(&total); err != nil {
		return nil, 0, translate(what, err)
	}
	limit := ""
	switch {
	case f.Limit == 0:
		limit = " LIMIT 10000"
	case f.Limit > 0:
		limit = " LIMIT " + arg(f.Limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT u.task, u.key, coalesce(u.parent_key, ''),
		ST_XMin(ST_GeomFromEWKB(u.bbox)), ST_YMin(ST_GeomFromEWKB(u.bbox)), ST_XMax(ST_GeomFromEWKB(u.bbox)), ST_YMax(ST_GeomFromEWKB(u.bbox)),
		u.state, u.attempts, u.requests, u.started_at, u.finished_at,
		u.features_inserted, u.features_skipped, u.features_updated, u.features_rejected, u.features_merged, u.bytes,
		coalesce(u.error, ''), coalesce(d.id, 0), coalesce(u.worker, ''), u.features_overlap
		FROM geoflow_units u LEFT JOIN geoflow_dlq d ON d.run_id = u.run_id AND d.task = u.task AND d.unit_key = u.key`+
		w+" ORDER BY u.task, u.key"+limit, args...)
	if err != nil {
		return nil, 0, translate(what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.UnitRecord, error) {
		var u store.UnitRecord
		var minx, miny, maxx, maxy *float64
		var state string
		err := row.Scan(&u.Task, &u.Key, &u.Parent, &minx, &miny, &maxx, &maxy, &state, &u.Attempts, &u.Requests,
			&u.StartedAt, &u.FinishedAt, &u.FeaturesInserted, &u.FeaturesSkipped, &u.FeaturesUpdated,
			&u.FeaturesRejected, &u.FeaturesMerged, &u.Bytes, &u.Error, &u.DeadLetter, &u.Worker, &u.FeaturesOverlap)
		u.State = store.State(state)
		if minx != nil && miny != nil && maxx != nil && maxy != nil {
			u.BBox = &orb.Bound{Min: orb.Point{*minx, *miny}, Max: orb.Point{*maxx, *maxy}}
		}
		return u, err
	})
	return out, total, translate(what, err)
}
