package postgis

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// features is a FeatureSource over a slice.
type features []*spatial.Feature

func (f *features) Next() (*spatial.Feature, error) {
	if len(*f) == 0 {
		return nil, io.EOF
	}
	x := (*f)[0]
	*f = (*f)[1:]
	return x, nil
}

// TestUpsertNullKey: a feature whose upsert key is NULL is still one row, however often
// it is written; a plain unique index would let every rerun add it again.
func TestUpsertNullKey(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := s.SetTaskState(ctx, run.ID, "t", "wfs", "running", ""); err != nil {
		t.Fatal(err)
	}
	table := &store.FeatureTable{Name: "up", SRID: 4326, Mode: store.ModeUpsert, Key: []string{"code"},
		Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeText}, {Name: "n", Property: "n", Type: store.TypeBigint}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	write := func(key string, n float64) store.Counts {
		src := features{
			{ID: "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"code": "A", "n": n}},
			{ID: "b", Geometry: orb.Point{3, 4}, Properties: map[string]any{"code": nil, "n": n}},
		}
		res, err := commitUnit(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "t", Key: key}, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
			return tx.WriteFeatures(ctx, table, &src)
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := write("u1", 1); res.Inserted != 2 {
		t.Fatalf("first write inserted %d, want 2", res.Inserted)
	}
	if res := write("u2", 1); res.Inserted != 0 || res.Skipped != 2 {
		t.Errorf("same features again: %+v, want 2 skipped", res)
	}
	if res := write("u3", 2); res.Updated != 2 {
		t.Errorf("changed features: %+v, want 2 updated", res)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM up").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d rows (%v), want 2 (the NULL-key feature once)", n, err)
	}
}

// commitUnit writes one unit's output the way the runner does: in the unit's transaction,
// then marks it done, then commits.
func commitUnit(ctx context.Context, s *Store, ref store.UnitRef, write func(context.Context, store.UnitTx) (store.Counts, error)) (store.Counts, error) {
	tx, err := s.BeginUnit(ctx, ref)
	if err != nil {
		return store.Counts{}, err
	}
	defer tx.Rollback(ctx)
	c, err := write(ctx, tx)
	if err != nil {
		return c, err
	}
	if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
		return c, err
	}
	return c, tx.Commit(ctx)
}

// TestStagingKeptPerConnection: a connection keeps its staging table from one unit to
// the next (created once, not per unit), and a connection that lost it (DISCARD TEMP)
// fails the next unit's copy as temporary, and creates it again on the next attempt.
func TestStagingKeptPerConnection(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(t), &Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	table := &store.FeatureTable{Name: "staged_once", SRID: 4326,
		Columns: []store.Column{{Name: "n", Property: "n", Type: store.TypeBigint}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	write := func(key string, n float64) (store.Counts, error) {
		src := features{
			{ID: key + "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"n": n}},
			{ID: key + "b", Geometry: orb.Point{3, 4}, Properties: map[string]any{"n": n + 1}},
		}
		return commitUnit(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "t", Key: key}, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
			return tx.WriteFeatures(ctx, table, &src)
		})
	}
	if res, err := write("u1", 1); err != nil || res.Inserted != 2 {
		t.Fatalf("first unit: %+v, %v; want 2 inserted", res, err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if conn.Conn().PgConn().CustomData()[stagingKey+stagingName(table)] == nil {
		t.Error("the connection does not record its staging table after the unit committed")
	}
	if _, err := conn.Exec(ctx, "DISCARD TEMP"); err != nil {
		t.Fatal(err)
	}
	conn.Release()
	_, err = write("u2", 10)
	f, ok := store.AsFault(err)
	if !ok || f.Code != "42P01" || !f.Temp {
		t.Fatalf("unit after DISCARD TEMP: %v (%+v), want a temporary fault 42P01", err, f)
	}
	if res, err := write("u2", 10); err != nil || res.Inserted != 2 {
		t.Fatalf("the unit again: %+v, %v; want 2 inserted", res, err)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM staged_once").Scan(&n); err != nil || n != 4 {
		t.Errorf("%d rows (%v), want 4", n, err)
	}
}

// TestUnitPlans: a unit's statements are planned for each execution (a plan cached while
// the target table was empty would scan all of it once it has grown), and commit
// asynchronously; outside a unit the server's settings stand.
func TestUnitPlans(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	tx, err := s.BeginUnit(ctx, store.UnitRef{RunID: 1, TaskID: "t", Key: "u"})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var plans, commit string
	if err := tx.(*unitTx).tx.QueryRow(ctx, "SELECT current_setting('plan_cache_mode'), current_setting('synchronous_commit')").Scan(&plans, &commit); err != nil {
		t.Fatal(err)
	}
	if plans != "force_custom_plan" || commit != "off" {
		t.Errorf("in a unit: plan_cache_mode %s, synchronous_commit %s; want force_custom_plan, off", plans, commit)
	}
	tx.Rollback(ctx)
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('plan_cache_mode')").Scan(&plans); err != nil {
		t.Fatal(err)
	}
	if plans != "auto" {
		t.Errorf("outside a unit: plan_cache_mode %s, want the server's auto", plans)
	}
}
