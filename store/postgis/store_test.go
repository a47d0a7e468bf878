package postgis

import (
	"context"
	"testing"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/storetest"
)

// TestStoreSuite runs the suite every store runs (store/storetest) against PostGIS, each
// subtest on a fresh database of its own. TestMain (dlq_test.go) stops the throwaway
// cluster testdb started.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		t.Helper()
		ctx := context.Background()
		s, err := Open(ctx, testdb.URL(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
