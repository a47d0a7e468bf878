package gpkg

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

var _ store.UnitLister = (*Store)(nil)

// ListUnits implements store.UnitLister: a run's units with their bbox, state, counts,
// and the id of their dead letter, for the web UI's map.
func (s *Store) ListUnits(ctx context.Context, f store.UnitFilter) ([]store.UnitRecord, int64, error) {
	conds := []string{"u.run_id = ?"}
	args := []any{f.RunID}
	if f.Task != "" {
		conds, args = append(conds, "u.task = ?"), append(args, f.Task)
	}
	if f.State != "" {
		conds, args = append(conds, "u.state = ?"), append(args, string(f.State))
	}
	if b := f.BBox; b != nil {
		conds = append(conds, "u.min_x <= ? AND u.max_x >= ? AND u.min_y <= ? AND u.max_y >= ?")
		args = append(args, b.Max[0], b.Min[0], b.Max[1], b.Min[1])
	}
	w := " WHERE " + strings.Join(conds, " AND ")
	what := fmt.Sprintf("listing the units of run %d", f.RunID)
	var total int64
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM geoflow_units u"+w, args...).Scan(&total); err != nil {
		return nil, 0, translate(what, err)
	}
	limit := ""
	switch {
	case f.Limit == 0:
		limit = " LIMIT 10000"
	case f.Limit > 0:
		limit = " LIMIT ?"
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT u.task, u.key, coalesce(u.parent_key, ''), u.min_x, u.min_y, u.max_x, u.max_y,
		u.state, u.attempts, u.requests, u.started_at, u.finished_at,
		u.features_inserted, u.features_skipped, u.features_updated, u.features_rejected, u.features_merged, u.bytes,
		coalesce(u.error, ''), coalesce(d.id, 0), coalesce(u.worker, ''), u.features_overlap
		FROM geoflow_units u LEFT JOIN geoflow_dlq d ON d.run_id = u.run_id AND d.task = u.task AND d.unit_key = u.key`+
		w+" ORDER BY u.task, u.key"+limit, args...)
	if err != nil {
		return nil, 0, translate(what, err)
	}
	defer rows.Close()
	var out []store.UnitRecord
	for rows.Next() {
		var u store.UnitRecord
		var minx, miny, maxx, maxy sql.NullFloat64
		var state string
		if err := rows.Scan(&u.Task, &u.Key, &u.Parent, &minx, &miny, &maxx, &maxy, &state, &u.Attempts, &u.Requests,
			nullTime{&u.StartedAt}, nullTime{&u.FinishedAt}, &u.FeaturesInserted, &u.FeaturesSkipped, &u.FeaturesUpdated,
			&u.FeaturesRejected, &u.FeaturesMerged, &u.Bytes, &u.Error, &u.DeadLetter, &u.Worker, &u.FeaturesOverlap); err != nil {
			return nil, 0, translate(what, err)
		}
		u.State = store.State(state)
		if minx.Valid && miny.Valid && maxx.Valid && maxy.Valid {
			u.BBox = &orb.Bound{Min: orb.Point{minx.Float64, miny.Float64}, Max: orb.Point{maxx.Float64, maxy.Float64}}
		}
		out = append(out, u)
	}
	return out, total, translate(what, rows.Err())
}
