package postgis

import (
	"context"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

// TestReadWhereReadOnly: a FeatureQuery.Where runs in a read-only transaction: an
// expression that would write (a sequence's nextval) fails, and the sequence is where it
// was.
func TestReadWhereReadOnly(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	table := &store.FeatureTable{Name: "ro", SRID: 4326, Columns: []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `CREATE SEQUENCE ro_seq; INSERT INTO ro (v, geom, gf_payload_hash) VALUES ('a', 'SRID=4326;POINT(1 1)', '\x01')`); err != nil {
		t.Fatal(err)
	}
	st, err := s.StoredTable(ctx, "", "ro")
	if err != nil {
		t.Fatal(err)
	}
	err = s.ReadFeatures(ctx, st, store.FeatureQuery{Where: "nextval('ro_seq') > 0"}, func(*store.StoredFeature) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a Where calling nextval: %v, want PostgreSQL's refusal in a read-only transaction", err)
	}
	var called bool
	if err := s.pool.QueryRow(ctx, "SELECT is_called FROM ro_seq").Scan(&called); err != nil || called {
		t.Errorf("the sequence was called: %v (%v)", called, err)
	}
}
