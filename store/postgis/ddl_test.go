package postgis

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

// TestConcurrentFirstRunsCreateTablesOnce: first runs that start together create the
// same tables (and schema) at once. CREATE ... IF NOT EXISTS is not safe against itself
// in PostgreSQL (two sessions both find the name free; one fails on pg_type's unique
// index, "relation already exists"); each store here is its own process's, as with
// simultaneous `geoflow run`s, and every ensure must succeed.
func TestConcurrentFirstRunsCreateTablesOnce(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		s, err := Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		stores[i] = s
	}
	for round := range 5 {
		schema := fmt.Sprintf("race_%d", round)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ft := &store.FeatureTable{Schema: schema, Name: "parcels", SRID: 4326, Columns: []store.Column{{Name: "a", Property: "a", Type: store.TypeText}}}
				err := s.EnsureFeatureTable(ctx, ft)
				if err == nil {
					err = s.FinishFeatureTable(ctx, ft)
				}
				if err == nil {
					err = s.EnsureTileTable(ctx, &store.TileTable{Schema: schema, Name: fmt.Sprintf("tiles_%d", i%2)})
				}
				if err == nil {
					err = s.EnsureAssetTable(ctx, &store.AssetTable{Schema: schema, Name: "scenes"})
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, process %d: %v", round, i, err)
			}
		}
	}
}
