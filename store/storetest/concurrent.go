package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// testConcurrentUnits: units of one run commit from several goroutines at once, as the
// runner executes them: some write features into one table, some upsert into another,
// some write nothing and plan children. Every unit ends done with what it wrote, and the
// store never deadlocks (a GeoPackage store queues units on its one writer).
func testConcurrentUnits(t *testing.T, s store.Store) {
	ctx := t.Context()
	appendT := &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: []store.Column{{Name: "n", Property: "n", Type: store.TypeBigint}}}
	upsertT := &store.FeatureTable{Name: "roads", SRID: 4326, Mode: store.ModeUpsert, Key: []string{"code"},
		Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeText}, {Name: "n", Property: "n", Type: store.TypeBigint}}}
	for _, tab := range []*store.FeatureTable{appendT, upsertT} {
		if err := s.EnsureFeatureTable(ctx, tab); err != nil {
			t.Fatal(err)
		}
	}
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	const units, workers, perUnit = 48, 8, 5
	addUnits(t, s, run.ID, "a", units)

	work := func(ctx context.Context, i int) error {
		ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)}
		var fs features
		for j := range perUnit {
			fs = append(fs, &spatial.Feature{ID: fmt.Sprintf("f%d.%d", i, j), Geometry: orb.Point{float64(i), float64(j)},
				Properties: map[string]any{"code": fmt.Sprintf("c%d.%d", i, j), "n": float64(i*100 + j)}})
		}
		tx, err := s.BeginUnit(ctx, ref)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		var c store.Counts
		var children []store.Unit
		switch i % 3 {
		case 0:
			c, err = tx.WriteFeatures(ctx, appendT, &fs)
		case 1:
			c, err = tx.WriteFeatures(ctx, upsertT, &fs)
		case 2: // an empty page: nothing written, children planned
			children = []store.Unit{{Key: unitKey(i) + ".0"}, {Key: unitKey(i) + ".1"}}
		}
		if err != nil {
			return fmt.Errorf("unit %s: %w", ref.Key, err)
		}
		if err := tx.Complete(ctx, c, children, nil, time.Now()); err != nil {
			return fmt.Errorf("unit %s: %w", ref.Key, err)
		}
		return tx.Commit(ctx)
	}

	workCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, units)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := work(workCtx, i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range units {
		next <- i
	}
	close(next)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("units committing at once did not finish within 40s: a deadlock")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	open, err := s.OpenUnits(ctx, run.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := units / 3 * 2; len(open) != want {
		t.Errorf("%d open units, want the %d children planned", len(open), want)
	}
	sum, err := s.FinishRun(ctx, run.ID, store.Done, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(units / 3 * 2 * perUnit); sum.UnitsDone != units || sum.Inserted != want {
		t.Errorf("FinishRun = %+v, want %d units done and %d features inserted", sum, units, want)
	}
	for _, tab := range []*store.FeatureTable{appendT, upsertT} {
		if err := s.FinishFeatureTable(ctx, tab); err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountFeatures(ctx, tab, world); err != nil || n != units/3*perUnit {
			t.Errorf("CountFeatures(%s) = %d (%v), want %d", tab.Name, n, err, units/3*perUnit)
		}
	}
}
