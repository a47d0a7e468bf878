package postgis

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testdb"
)

// TestMigrateConcurrentSmallPool: every run migrates first, and a server starts many at
// once: migrations taken together on a pool smaller than their number all finish (River's
// are applied on the connection that holds the lock, not a second pooled one, which
// waiters holding the rest of the pool would never free).
func TestMigrateConcurrentSmallPool(t *testing.T) {
	db := testdb.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, db, &Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migration %d: %v", i, err)
		}
	}
	states, err := s.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	river := 0
	for _, st := range states {
		if st.AppliedAt == nil {
			t.Errorf("%s pending after Migrate", st.Label())
		}
		if st.Line == riverLine {
			river++
		}
	}
	if river == 0 {
		t.Error("no River migration listed")
	}
}
