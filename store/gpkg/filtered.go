package gpkg

import (
	"context"
	"fmt"
)

// FilteredFeatures implements tasks.Records.
func (s *Store) FilteredFeatures(ctx context.Context, runID int64, task string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(sum(features_filtered), 0) FROM geoflow_units WHERE run_id = ? AND task = ?`,
		runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the features task %q's transform.where left out", task), err)
}
