package gpkg_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/storetest"
)

// TestStoreSuite runs the suite every store runs (store/storetest) against a GeoPackage,
// each subtest on a new file of its own.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		t.Helper()
		ctx := context.Background()
		s, err := gpkg.Open(ctx, filepath.Join(t.TempDir(), "s.gpkg"), nil)
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
