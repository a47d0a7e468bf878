package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// quotaFixture is the sample WFS behind a quota of 10 requests per one-second window
// that it does not advertise (so that even one process meets it), answering the requests
// over it 429 with Retry-After, and a flow harvesting it.
func quotaFixture(t *testing.T) (*wfsserver.Server, string, string) {
	t.Helper()
	fx := wfsserver.New(wfsserver.Options{Features: 2000, CountDefault: 100, ImplementsSorting: true, Seed: 1,
		Quota: &wfsserver.Quota{Limit: 10, Window: time.Second, Headers: "none", RetryAfter: true}})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	flow := writeFlow(t, `
name: quota
defaults:
  retry: {max_attempts: 10, base_delay: 200ms}
tasks:
  parcels:
    type: wfs
    url: `+srv.URL+`/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: parcels}
`)
	return fx, srv.URL, flow
}

var hostLine = regexp.MustCompile(`(?m)^  host (\S+): (\d+) requests, (\d+) retries, (\d+) answered 429, waited `)

// summaryHost reads the host line of a run's summary: requests and 429s.
func summaryHost(t *testing.T, out, url string) (requests, throttled int64) {
	t.Helper()
	m := hostLine.FindAllStringSubmatch(out, -1)
	if len(m) != 1 || m[0][1] != url {
		t.Fatalf("the summary's hosts: %q, want one line for %s\n%s", m, url, out)
	}
	requests, _ = strconv.ParseInt(m[0][2], 10, 64)
	throttled, _ = strconv.ParseInt(m[0][4], 10, 64)
	return requests, throttled
}

// TestRunSummaryHosts: the summary of a run against a quota-limited host says the
// requests and the 429s the server counted, exactly; runs show and its JSON say the same.
func TestRunSummaryHosts(t *testing.T) { eachStore(t, testRunSummaryHosts) }

func testRunSummaryHosts(t *testing.T, db string) {
	fx, url, flow := quotaFixture(t)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	served := fx.Stats()
	requests, throttled := summaryHost(t, out, url)
	if served.TooManyRequests == 0 || requests != served.Requests || throttled != served.TooManyRequests {
		t.Errorf("the summary says %d requests, %d answered 429; the server counted %d and %d (want some 429s)\n%s",
			requests, throttled, served.Requests, served.TooManyRequests, out)
	}
	if strings.Contains(out, "by process") {
		t.Errorf("a local run's summary splits its requests by process:\n%s", out)
	}

	code, out, _ = geoflow(t, env, "runs", "show", "1", "--json")
	var run struct {
		Hosts []struct {
			Host        string `json:"host"`
			Requests    int64  `json:"requests"`
			RateLimited int64  `json:"rate_limited"`
		} `json:"hosts"`
		Workers []struct {
			Units int64 `json:"units"`
		} `json:"workers"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("runs show --json: exit %d\n%s", code, out)
	}
	if len(run.Hosts) != 1 || run.Hosts[0].Requests != served.Requests || run.Hosts[0].RateLimited != served.TooManyRequests || len(run.Workers) != 1 {
		t.Errorf("runs show --json: hosts %+v, processes %+v; want %d requests and %d 429s, one process", run.Hosts, run.Workers, served.Requests, served.TooManyRequests)
	}
	code, out, _ = geoflow(t, env, "runs", "show", "1")
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(url) + `\s+(\d+)\s+\d+\s+(\d+)\s`).FindStringSubmatch(out)
	if code != 0 || !strings.Contains(out, "HOST") || row == nil || row[1] != strconv.FormatInt(served.Requests, 10) ||
		row[2] != strconv.FormatInt(served.TooManyRequests, 10) {
		t.Errorf("runs show: exit %d, want a row of %s with %d requests and %d 429s\n%s", code, url, served.Requests, served.TooManyRequests, out)
	}
}
