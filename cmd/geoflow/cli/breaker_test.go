package cli_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// TestBreakerDeadLettersHaveTheRealCause: a host that goes down opens its circuit
// breaker; the units the breaker then keeps from being sent, past their max_elapsed, are
// dead letters of the host's real failure (HTTP 500, http_5xx) saying they were not sent,
// never circuit_open. A replay while the host is still down reports the units its own
// breaker kept back as not sent, apart from those that failed again; once the host is
// back, a replay completes them all.
func TestBreakerDeadLettersHaveTheRealCause(t *testing.T) {
	eachStore(t, testBreakerDeadLettersHaveTheRealCause)
}

func testBreakerDeadLettersHaveTheRealCause(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	var healed atomic.Bool
	outage := wfsserver.Outage(3, 1<<62, nil) // down after three pages, until healed
	fx := wfsserver.New(wfsserver.Options{Features: 3000, CountDefault: 100, ImplementsSorting: true,
		Faults: wfsserver.Faults{FailForever: func(r *http.Request) bool { return !healed.Load() && outage(r) }}})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	// max_elapsed is shorter than the breaker's cool-down (30 s): a unit the open breaker
	// refuses cannot be sent in its time and gives up at once.
	flow := writeFlow(t, `
name: breakertest
defaults:
  retry: {max_attempts: 2, base_delay: 5ms, max_delay: 20ms, max_elapsed: 3s}
  rate_limit: {concurrency: 2}
tasks:
  parcels:
    type: wfs
    url: `+srv.URL+`/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: public.parcels}
`)
	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error")
	if code != cli.ExitDeadLetters {
		t.Fatalf("run against a host gone down: exit %d, want 2\n%s%s", code, out, errs)
	}
	entries := listJSON(t, env, "--run", "1")
	notSent := 0
	for _, e := range entries {
		if e.ErrorClass != "http_5xx" || e.HTTPStatus != 500 {
			t.Errorf("dead letter %d: class %s status %d, want the host's real failure (http_5xx 500): %s", e.ID, e.ErrorClass, e.HTTPStatus, e.Error)
		}
		if strings.Contains(e.Error, "this unit was not sent") {
			notSent++
			if !strings.Contains(e.Error, "HTTP 500 Internal Server Error from http://127.0.0.1:") || !strings.Contains(e.Error, "breaker open since ") {
				t.Errorf("dead letter %d of a unit not sent does not name the real failure and the breaker: %s", e.ID, e.Error)
			}
		}
	}
	if notSent == 0 || notSent == len(entries) {
		t.Fatalf("%d of %d dead letters not sent, want some (the breaker opened) but not all (its opening failures were sent)\n%s", notSent, len(entries), out)
	}
	if code, stats, _ := geoflow(t, env, "dlq", "stats"); code != 0 || strings.Contains(stats, "circuit_open") {
		t.Errorf("dlq stats: exit %d, want every dead letter under http_5xx:\n%s", code, stats)
	}

	// Still down: the replay's first units fail again and open its own breaker, which
	// keeps the others from being sent: those are reported as not sent, not failed again.
	code, out, _ = geoflow(t, env, "dlq", "replay", "--all", "--log-level", "error")
	if code != cli.ExitDeadLetters || !strings.Contains(out, "0 of ") ||
		!strings.Contains(out, "breaker open (last failure: HTTP 500 Internal Server Error); still in the dead-letter queue") {
		t.Errorf("replay against a host still down: exit %d\n%s", code, out)
	}
	var failedAgain, unsent int
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, ": not sent: host "):
			unsent++
		case strings.Contains(line, ": failed again: "):
			failedAgain++
		}
	}
	if unsent == 0 || failedAgain == 0 || unsent+failedAgain != len(entries) {
		t.Errorf("replay of %d: %d failed again, %d not sent; want both, adding up\n%s", len(entries), failedAgain, unsent, out)
	}
	if open := listJSON(t, env); len(open) != len(entries) {
		t.Errorf("%d open after the replay, want all %d still open", len(open), len(entries))
	}

	healed.Store(true)
	code, out, errs = geoflow(t, env, "dlq", "replay", "--all", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "0 failed again, 0 not sent") {
		t.Fatalf("replay once the host is back: exit %d\n%s%s", code, out, errs)
	}
	checkComplete(t, db, featuresIn(fx, harvestArea))
}
