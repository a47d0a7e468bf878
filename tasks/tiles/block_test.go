package tiles_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
)

// units returns the keys of a run's units by kind: "block", "tile", "expand".
func (h *harness) units(runID int64) map[string][]string {
	h.t.Helper()
	out := map[string][]string{}
	for _, r := range testdb.Rows(h.t, h.dbURL, fmt.Sprintf("SELECT key, state FROM geoflow_units WHERE run_id = %d ORDER BY key", runID)) {
		k := r[0].(string)
		switch {
		case strings.HasPrefix(k, "b/"):
			out["block"] = append(out["block"], k)
		case strings.HasPrefix(k, "e/"):
			out["expand"] = append(out["expand"], k)
		default:
			out["tile"] = append(out["tile"], k+" "+r[1].(string))
		}
	}
	return out
}

// broken returns the tiles of the cover for which match is true.
func broken(want map[string]bool, match func(z, x, y int) bool) map[string]bool {
	out := map[string]bool{}
	for k := range want {
		var z, x, y int
		fmt.Sscanf(k, "%d/%d/%d", &z, &x, &y)
		if match(z, x, y) {
			out[k] = true
		}
	}
	return out
}

// TestBlocksOfTiles: tiles are fetched in blocks (units of up to 256 tiles), each tile
// once, and a rerun revalidates them in blocks too.
func TestBlocksOfTiles(t *testing.T) {
	h := newHarness(t, tileserver.Options{})
	f := h.flow(basemap(munich, "[13, 16]", "    rate_limit: {concurrency: 2}\n"))
	want := cover(munich, 13, 16)
	res := h.run(f, engine.RunOptions{})
	if res.Status != store.Done || res.Summary.Inserted != int64(len(want)) {
		t.Fatalf("run %s, inserted %d; want done and %d\n%s", res.Status, res.Summary.Inserted, len(want), tail(h.logs.String()))
	}
	st := h.fx.Stats()
	for k, n := range st.Served {
		if !want[k] || n != 1 {
			t.Errorf("tile %s served %d times (in cover: %v)", k, n, want[k])
		}
	}
	if len(st.Served) != len(want) {
		t.Errorf("%d tiles served, want %d", len(st.Served), len(want))
	}
	u := h.units(res.RunID)
	if len(u["block"]) == 0 || len(u["block"])+len(u["tile"]) >= len(want)/4 {
		t.Errorf("%d block units and %d tile units for %d tiles; want blocks of several tiles", len(u["block"]), len(u["tile"]), len(want))
	}
	t.Logf("%d tiles in %d blocks, %d single tiles, %d expansions", len(want), len(u["block"]), len(u["tile"]), len(u["expand"]))
	if rows := h.rows("status = 'ok'"); len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	// A block's bbox is its tiles' footprint: the blocks together cover the area.
	if n := testdb.Int64(t, h.dbURL, fmt.Sprintf(`SELECT count(*) FROM geoflow_units u WHERE u.run_id = %d AND u.key LIKE 'b/%%'
		AND NOT EXISTS (SELECT 1 FROM public.basemap_tiles t WHERE ST_Intersects(t.footprint, u.bbox))`, res.RunID)); n != 0 {
		t.Errorf("%d blocks whose bbox holds no tile", n)
	}

	h.fx.ResetStats()
	res = h.run(f, engine.RunOptions{})
	if st := h.fx.Stats(); res.Status != store.Done || st.OK != 0 || st.NotModified != int64(len(want)) {
		t.Errorf("rerun %s: %d 200s, %d 304s; want %d 304s", res.Status, st.OK, st.NotModified, len(want))
	}
}

// TestBlockTileFailsAlone: a tile of a block that fails for good is a dead letter of its
// own, keyed and boxed as that one tile, while the rest of its block is stored with the
// block. A permanent failure (a portal's HTML page) leaves the block to go on; a failure
// that says the server is in trouble (500s) turns the block's remaining tiles into units
// of their own, which succeed. A replay once the server has healed fetches only the dead
// tiles.
func TestBlockTileFailsAlone(t *testing.T) {
	tests := []struct {
		name       string
		breakTiles func(*tileserver.Server, func(z, x, y int) bool) // nil heals
		class      dlq.Class
		split      bool // the rest of a block becomes single tiles
	}{
		{name: "permanent", class: dlq.ClassParse,
			breakTiles: func(s *tileserver.Server, m func(z, x, y int) bool) {
				if m == nil {
					s.SetHTML200(tileserver.HTMLOff, nil)
					return
				}
				s.SetHTML200(tileserver.HTMLPortal, m)
			}},
		{name: "server trouble", class: dlq.ClassHTTP5xx, split: true,
			breakTiles: func(s *tileserver.Server, m func(z, x, y int) bool) { s.SetFail(m) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tileserver.Options{})
			dead := func(z, x, y int) bool { return z == 15 && x%5 == 0 && y%3 == 0 }
			tt.breakTiles(h.fx, dead)
			want := cover(munich, 15, 15)
			bad := broken(want, dead)
			if len(bad) < 2 {
				t.Fatalf("%d broken tiles in the cover", len(bad))
			}
			f := h.flow(basemap(munich, "[15, 15]", "    rate_limit: {concurrency: 2}\n"))
			hd := retry.New(&retry.Options{Logger: h.logger(), Seed: 1, Breaker: retry.Breaker{Disabled: true}})
			res := h.run(f, engine.RunOptions{HTTP: hd})
			if res.Status != store.Failed || res.DeadLetters() != int64(len(bad)) {
				t.Fatalf("run %s with %d dead units; want failed with %d\n%s", res.Status, res.DeadLetters(), len(bad), tail(h.logs.String()))
			}
			ctx := context.Background()
			entries, err := h.db.ListDeadLetters(ctx, dlq.Filter{RunID: res.RunID})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !bad[e.Unit] || e.Class != tt.class || e.BBox == nil {
					t.Errorf("entry %s: class %s bbox %v; want one of the broken tiles, class %s", e.Unit, e.Class, e.BBox, tt.class)
				}
				if e.BBox != nil && (e.BBox.Max[0]-e.BBox.Min[0] > 0.011 || e.BBox.Max[0] <= e.BBox.Min[0]) {
					t.Errorf("entry %s: bbox %v is not one z15 tile", e.Unit, e.BBox)
				}
			}
			if rows := h.rows("status = 'ok'"); len(rows) != len(want)-len(bad) {
				t.Errorf("%d rows, want %d (every tile but the broken ones)", len(rows), len(want)-len(bad))
			}
			for k, n := range h.fx.Stats().Served {
				if n != 1 {
					t.Errorf("tile %s fetched %d times", k, n)
				}
			}
			u := h.units(res.RunID)
			singles := 0
			for _, k := range u["tile"] {
				key, state, _ := strings.Cut(k, " ")
				if bad[key] != (state == string(store.Failed)) || (!bad[key] && state != string(store.Done)) {
					t.Errorf("unit %s is %s", key, state)
				}
				singles++
			}
			if !tt.split && singles != len(bad) {
				t.Errorf("%d single-tile units; want only the %d broken tiles", singles, len(bad))
			}
			if tt.split && singles <= len(bad) {
				t.Errorf("%d single-tile units; want the rest of the broken tiles' blocks too", singles)
			}
			if len(u["block"]) == 0 {
				t.Errorf("no blocks")
			}

			tt.breakTiles(h.fx, nil)
			h.fx.ResetStats()
			rr, err := engine.Replay(ctx, entries, engine.ReplayOptions{Store: testflow.Stores(h.db), HTTP: h.handler(), Registry: registry(), Logger: h.logger()})
			if err != nil || !rr.OK() {
				t.Fatalf("replay: %d units, %d dead, %v\n%s", rr.Units, rr.Dead, err, tail(h.logs.String()))
			}
			if st := h.fx.Stats(); len(st.Served) != len(bad) {
				t.Errorf("the replay fetched %d tiles, want the %d dead ones", len(st.Served), len(bad))
			}
			if rows := h.rows("status = 'ok'"); len(rows) != len(want) {
				t.Errorf("after the replay: %d rows, want %d", len(rows), len(want))
			}
		})
	}
}

// TestBlockStopsOnShutdown: asked to stop, a block in flight stops starting tiles,
// commits those it has and leaves the rest pending as single tiles; the resume fetches
// only those, so every tile is fetched once across the two sessions.
func TestBlockStopsOnShutdown(t *testing.T) {
	h := newHarness(t, tileserver.Options{Latency: 10 * time.Millisecond})
	f := h.flow(basemap(munich, "[16, 16]", "    rate_limit: {concurrency: 2}\n"))
	want := cover(munich, 16, 16)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for h.fx.Stats().OK < 40 {
			time.Sleep(2 * time.Millisecond)
		}
		cancel()
	}()
	res, err := engine.Run(ctx, f, engine.RunOptions{Store: testflow.Stores(h.db), Logger: h.logger(), HTTP: h.handler(), Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first := h.fx.Stats().OK
	if res.Status != store.Interrupted || first >= int64(len(want))/2 {
		t.Fatalf("first session %s with %d of %d tiles fetched; want interrupted early\n%s", res.Status, first, len(want), tail(h.logs.String()))
	}
	if first > 40+10 {
		t.Errorf("%d tiles fetched after asking to stop at 40: the blocks in flight went on", first)
	}
	if rows := len(h.rows("true")); int64(rows) != first {
		t.Errorf("%d rows after the stop for %d tiles fetched; want the blocks in flight to commit what they had", rows, first)
	}
	if !strings.Contains(h.logs.String(), "stopping: the block commits the tiles it has") {
		t.Errorf("no block stopped part-way\n%s", tail(h.logs.String()))
	}
	res, err = engine.Run(context.Background(), f, engine.RunOptions{Store: testflow.Stores(h.db), Logger: h.logger(), HTTP: h.handler(), Resume: true})
	if err != nil || res.Status != store.Done {
		t.Fatalf("resume: %v %v\n%s", res.Status, err, tail(h.logs.String()))
	}
	st := h.fx.Stats()
	for k, n := range st.Served {
		if n != 1 {
			t.Errorf("tile %s fetched %d times across the stop", k, n)
		}
	}
	if len(st.Served) != len(want) || len(h.rows("status = 'ok'")) != len(want) {
		t.Errorf("%d tiles fetched, %d rows; want %d", len(st.Served), len(h.rows("status = 'ok'")), len(want))
	}
}
