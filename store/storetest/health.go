package storetest

import (
	"testing"
	"time"

	"github.com/geoflow/geoflow/store"
)

// testMigrations: a migrated store applies nothing more however often it migrates, lists
// every migration as applied, in version order, and answers its health checks.
func testMigrations(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 2 {
		applied, err := s.Migrate(ctx)
		if err != nil {
			t.Fatalf("migrating again (%d): %v", i+1, err)
		}
		if len(applied) != 0 {
			t.Errorf("migrating a migrated store again (%d) applied %+v, want nothing", i+1, applied)
		}
	}
	states, err := s.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) == 0 {
		t.Fatal("MigrationStatus lists no migrations")
	}
	for i, st := range states {
		if st.AppliedAt == nil {
			t.Errorf("migration %s is pending after Migrate", st.Label())
		} else {
			near(t, "applied_at of "+st.Name, *st.AppliedAt, time.Now(), time.Hour)
		}
		if st.Name == "" {
			t.Errorf("migration %d has no name", st.Version)
		}
		// Each line (geoflow's, then River's queue's in the PostgreSQL store) in version order.
		if i > 0 && st.Line == states[i-1].Line && st.Version <= states[i-1].Version {
			t.Errorf("migration %s listed after %s: want version order", st.Label(), states[i-1].Label())
		}
	}
	if err := s.CheckMigrations(ctx); err != nil {
		t.Errorf("CheckMigrations: %v", err)
	}
	if err := store.CheckMigrations(ctx, s); err != nil {
		t.Errorf("store.CheckMigrations: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}
