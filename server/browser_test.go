package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/browser"
	"github.com/geoflow/geoflow/store"
)

// startBrowser starts headless Chromium for the test; there is no skipping when it is
// missing: make test installs it.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel, err := browser.Start(context.Background(), nil)
	if err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	t.Cleanup(cancel)
	return ctx
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it is true, across navigations (a poll
// does not survive one: it is started again on the new page).
func waitFor(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(left), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s (%s): %v", what, expr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
}

// TestBrowserRerunArea is the UI's main job, in a real browser: a run whose units in
// two areas died shows them red on its map; a person heals the server, draws a box
// around one area with the mouse, and reruns it; the new run's page follows it live to
// done, and that area's features are stored.
func TestBrowserRerunArea(t *testing.T) {
	dead := orb.Point{11.47, 48.07}
	u := newUI(t, uiOptions{failAt: []orb.Point{dead, {11.53, 48.13}}})
	id, err := u.launcher.StartRun(context.Background(), "parcels", flowsScope())
	if err != nil {
		t.Fatal(err)
	}
	run := u.waitRun(id)
	if run.UnitsDead == 0 {
		t.Fatalf("run %d: no dead units: %+v", id, run)
	}
	u.healed.Store(true)
	ctx := startBrowser(t)

	navigate(t, ctx, fmt.Sprintf("%s/runs/%d", u.srv.URL, id))
	waitFor(t, ctx, "the run map to draw its units", `document.getElementById('run-map').dataset.ready === '1'`, 30*time.Second)
	drawn := eval[int](t, ctx, `+document.getElementById('run-map').dataset.rendered`)
	deadDrawn := eval[int](t, ctx, `geoflow.maps['run-map'].fc.features.filter(f => f.properties.state === 'failed').length`)
	if drawn == 0 || int64(deadDrawn) != run.UnitsDead {
		t.Fatalf("the map drew %d units, %d of them dead; want some, and the run's %d dead", drawn, deadDrawn, run.UnitsDead)
	}
	t.Logf("run map: %d units drawn (%d dead) in %s ms from navigation", drawn, deadDrawn,
		eval[string](t, ctx, `document.getElementById('run-map').dataset.drawnMs`))

	// The box to draw: around the dead units that hold the first point, in pixels.
	box := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
		const gm = geoflow.maps['run-map'];
		const dead = gm.fc.features.filter(f => f.properties.state === 'failed');
		let b = null;
		for (const f of dead) {
			const c = f.geometry.coordinates[0];
			const fb = [c[0][0], c[0][1], c[2][0], c[2][1]];
			if (fb[0] <= %[1]g && %[1]g <= fb[2] && fb[1] <= %[2]g && %[2]g <= fb[3]) {
				b = b ? [Math.min(b[0], fb[0]), Math.min(b[1], fb[1]), Math.max(b[2], fb[2]), Math.max(b[3], fb[3])] : fb;
			}
		}
		const r = gm.map.getCanvas().getBoundingClientRect();
		const p1 = gm.map.project([b[0], b[3]]), p2 = gm.map.project([b[2], b[1]]);
		return [r.left + p1.x - 3, r.top + p1.y - 3, r.left + p2.x + 3, r.top + p2.y + 3];
	})()`, dead[0], dead[1]))
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("button.draw")),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box[0], box[1]),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, box[0], box[1], chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (box[0]+box[2])/2, (box[1]+box[3])/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box[2], box[3], chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, box[2], box[3], chromedp.ButtonLeft),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the rerun dialog", `document.getElementById('rerun').open`, 5*time.Second)
	bbox := eval[string](t, ctx, `document.getElementById('rerun-bbox').value`)
	area, err := flowsArea(bbox)
	if err != nil || !area.Contains(dead) {
		t.Fatalf("the box drawn is %q (%v); want one around %v", bbox, err, dead)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#rerun-go"))); err != nil {
		t.Fatal(err)
	}
	next := id + 1
	waitFor(t, ctx, "the new run's page", fmt.Sprintf(`location.pathname === '/runs/%d' && !!document.getElementById('run-map')`, next), 15*time.Second)
	// The page follows the run live (polling) until it is done.
	waitFor(t, ctx, "the rerun to finish on its page", `document.getElementById('run-map').dataset.status === 'done'`, 90*time.Second)
	waitFor(t, ctx, "the map to draw the rerun's units", `document.getElementById('run-map').dataset.ready === '1'`, 30*time.Second)

	rerun, err := u.db.GetRun(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	info, err := u.db.RunInfo(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if rerun.Status != store.Done || rerun.Trigger != store.TriggerUI || info.Area == nil || !info.Area.Equal(area) {
		t.Errorf("run %d: %s, trigger %s, area %v; want done, ui, %v", next, rerun.Status, rerun.Trigger, info.Area, area)
	}
	want := int64(len(u.fx.FeaturesIn(area)))
	if got := u.storedIn(area); got != want || want == 0 {
		t.Errorf("after the rerun %d features intersecting %s are stored; the server has %d", got, bbox, want)
	}
	t.Logf("drew %s; run %d stored the area's %d features (%d units, %d inserted)", bbox, next, want, rerun.UnitsTotal, rerun.FeaturesInserted)
}

// TestBrowserPages opens every page in a real browser: the maps draw, hostile text from
// a server shows as text and runs nothing, and an entry opens whole on the dead-letter
// page.
func TestBrowserPages(t *testing.T) {
	u := newUI(t, uiOptions{})
	u.seedHostile()
	ctx := startBrowser(t)
	for _, tt := range []struct{ path, mapID string }{
		{"/", ""}, {"/runs", ""}, {"/runs/1", "run-map"}, {"/dlq", "dlq-map"}, {"/flows/parcels", "flow-map"},
	} {
		navigate(t, ctx, u.srv.URL+tt.path)
		if tt.mapID != "" {
			waitFor(t, ctx, tt.path+"'s map", fmt.Sprintf(`document.getElementById('%s').dataset.ready === '1'`, tt.mapID), 30*time.Second)
			if n := eval[string](t, ctx, fmt.Sprintf(`document.getElementById('%s').dataset.rendered`, tt.mapID)); n == "0" && tt.mapID != "flow-map" {
				t.Errorf("%s: the map rendered no box", tt.path)
			}
		}
		if x := eval[any](t, ctx, `window.__xss ?? null`); x != nil {
			t.Errorf("%s ran a script from a server's text: __xss = %v", tt.path, x)
		}
	}
	// The dead letter, opened from its row: the hostile error and snippet are text.
	navigate(t, ctx, u.srv.URL+"/dlq")
	waitFor(t, ctx, "the DLQ map", `document.getElementById('dlq-map').dataset.ready === '1'`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("a.show-entry"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the entry's details", `!!document.querySelector('#entry pre.err')`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector('#entry pre.err').textContent`); got != "HTTP 500: "+hostile[0] {
		t.Errorf("the entry's error shows as %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#entry img, #entry script').length`); n != 0 {
		t.Errorf("the entry's details hold %d img/script elements", n)
	}
	if x := eval[any](t, ctx, `window.__xss ?? null`); x != nil {
		t.Errorf("the dead-letter details ran a script: __xss = %v", x)
	}
}

// TestBrowserReadOnlyEntry: a dead letter opened on a read-only server shows whole, with
// no Replay or Discard button (the API would refuse both); a server that does both
// offers both.
func TestBrowserReadOnlyEntry(t *testing.T) {
	ctx := startBrowser(t)
	for _, tt := range []struct {
		name     string
		readOnly bool
		want     int
	}{{"read-only", true, 0}, {"read-write", false, 2}} {
		u := newUI(t, uiOptions{readOnly: tt.readOnly})
		u.seedHostile()
		navigate(t, ctx, u.srv.URL+"/dlq?id=1")
		waitFor(t, ctx, tt.name+": the entry's details", `!!document.querySelector('#entry pre.err')`, 10*time.Second)
		if n := eval[int](t, ctx, `document.querySelectorAll('#entry button.replay-one, #entry button.discard-one').length`); n != tt.want {
			t.Errorf("%s: the entry offers %d replay/discard buttons, want %d", tt.name, n, tt.want)
		}
	}
}

// drag presses the mouse at (x1, y1), moves to (x2, y2) and releases it there.
func drag(t *testing.T, ctx context.Context, x1, y1, x2, y2 float64) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y1),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x1, y1, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (x1+x2)/2, (y1+y2)/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x2, y2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x2, y2, chromedp.ButtonLeft),
	); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserRerunDialogDraw: drawing a box to rerun, in a real browser. A click, or a
// drag with no width at 6 decimals, draws nothing (the tool waits for a drag; the server
// would refuse min = max); a drag past the world's edge gives a box within it, as the
// server takes it; Enter in the dialog's box field starts the run, as Go does (Cancel
// came first and took Enter, losing the box).
func TestBrowserRerunDialogDraw(t *testing.T) {
	u := newUI(t, uiOptions{})
	runID, _ := u.seedHostile()
	ctx := startBrowser(t)
	navigate(t, ctx, fmt.Sprintf("%s/runs/%d", u.srv.URL, runID))
	waitFor(t, ctx, "the run map", `document.getElementById('run-map').dataset.ready === '1'`, 30*time.Second)

	// A click: no dialog, and the tool still draws.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("button.draw"))); err != nil {
		t.Fatal(err)
	}
	mid := eval[[]float64](t, ctx, `(() => { const r = geoflow.maps['run-map'].map.getCanvas().getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	drag(t, ctx, mid[0], mid[1], mid[0], mid[1])
	time.Sleep(300 * time.Millisecond)
	if eval[bool](t, ctx, `document.getElementById('rerun').open`) || !eval[bool](t, ctx, `geoflow.maps['run-map'].drawing === true`) {
		t.Fatal("a click opened the dialog, or ended the drawing")
	}

	// A drag too small to keep a width at 6 decimals (3 pixels at zoom 22): nothing.
	px := eval[[]float64](t, ctx, `(() => { const m = geoflow.maps['run-map'].map;
		m.jumpTo({ center: [11.5, 48.1], zoom: 22 });
		const r = m.getCanvas().getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	drag(t, ctx, px[0], px[1], px[0]+3, px[1]+3)
	time.Sleep(300 * time.Millisecond)
	if eval[bool](t, ctx, `document.getElementById('rerun').open`) || !eval[bool](t, ctx, `geoflow.maps['run-map'].drawing === true`) {
		t.Fatal("a box of no width at 6 decimals opened the dialog, or ended the drawing")
	}

	// A drag past the world's edge. This MapLibre keeps its view within the world
	// (renderWorldCopies: false), so the map's own mouse events are fired with the
	// positions a view past the edge gives: the box stops at 180° and 85.05°.
	eval[bool](t, ctx, `(() => { const m = geoflow.maps['run-map'].map, ev = (lng, lat) => ({ lngLat: { lng, lat }, preventDefault() {} });
		m.fire('mousedown', ev(170.25, 10.5)); m.fire('mousemove', ev(200, 88)); m.fire('mouseup', ev(200.5, 89)); return true; })()`)
	waitFor(t, ctx, "the rerun dialog", `document.getElementById('rerun').open`, 5*time.Second)
	if bbox := eval[string](t, ctx, `document.getElementById('rerun-bbox').value`); bbox != "170.25,10.5,180,85.05" {
		t.Errorf("the box drawn past the world's edge is %q, want 170.25,10.5,180,85.05", bbox)
	}

	// Enter in the box field starts the run over the box typed.
	if err := chromedp.Do(ctx, chromedp.SetValue("#rerun-bbox", "11.45,48.05,11.5,48.1"), chromedp.SendKeys("#rerun-bbox", kb.Enter)); err != nil {
		t.Fatal(err)
	}
	next := runID + 1
	waitFor(t, ctx, "the new run's page", fmt.Sprintf(`location.pathname === '/runs/%d'`, next), 15*time.Second)
	if r := u.waitRun(next); r.Trigger != store.TriggerUI {
		t.Errorf("run %d: %+v", next, r)
	}
}
