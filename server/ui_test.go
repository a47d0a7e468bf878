package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/server"
	"github.com/geoflow/geoflow/store"
)

// hostile is text a server sent back that would run in a page inserted as HTML.
var hostile = []string{`<script>window.__xss=1</script>`, `"><img src=x onerror="window.__xss=2">`}

// seedHostile records a run of parcels with one done unit and one dead letter whose
// error, response and request carry hostile text.
func (u *ui) seedHostile() (runID, entryID int64) {
	u.t.Helper()
	ctx := context.Background()
	run, err := u.db.StartRun(ctx, store.RunStart{Flow: "parcels"})
	if err != nil {
		u.t.Fatal(err)
	}
	defer run.Close()
	if err := u.db.SetTaskState(ctx, run.ID, "parcels", "wfs", store.Running, ""); err != nil {
		u.t.Fatal(err)
	}
	a := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.50, 48.10}}
	b := orb.Bound{Min: orb.Point{11.50, 48.10}, Max: orb.Point{11.55, 48.15}}
	if err := u.db.AddUnits(ctx, run.ID, "parcels", []store.Unit{{Key: "q.0", BBox: &a}, {Key: "q.1", BBox: &b}}); err != nil {
		u.t.Fatal(err)
	}
	e := dlq.Entry{Flow: "parcels", Task: "parcels", RunID: run.ID, Unit: "q.1", BBox: &b,
		Request: dlq.Request{Method: "GET", URL: "https://wfs.example/wfs?typename=" + url.QueryEscape(hostile[1])},
		Class:   dlq.ClassHTTP5xx, Error: "HTTP 500: " + hostile[0], HTTPStatus: 500, Snippet: hostile[1], Attempts: 3}
	id, err := u.db.RecordDeadLetter(ctx, store.UnitRef{RunID: run.ID, TaskID: "parcels", Key: "q.1"}, e)
	if err != nil {
		u.t.Fatal(err)
	}
	if err := u.db.SetTaskState(ctx, run.ID, "parcels", "wfs", store.Failed, hostile[0]); err != nil {
		u.t.Fatal(err)
	}
	if _, err := u.db.FinishRun(ctx, run.ID, store.Failed, hostile[1]); err != nil {
		u.t.Fatal(err)
	}
	return run.ID, id
}

func (u *ui) do(method, path, body string, header ...string) (int, string, http.Header) {
	u.t.Helper()
	return u.doFrom("", method, path, body, header...)
}

// doFrom is do from the local address from (127.0.0.2: another client of the loopback
// server), or from the default one when from is "".
func (u *ui) doFrom(from, method, path, body string, header ...string) (int, string, http.Header) {
	u.t.Helper()
	req, err := http.NewRequest(method, u.srv.URL+path, strings.NewReader(body))
	if err != nil {
		u.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if from != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		client.Transport = &http.Transport{DialContext: d.DialContext}
		defer client.CloseIdleConnections()
	}
	resp, err := client.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestPagesEscapeServerText: every page renders, and text that came from a server
// (errors, response snippets, request URLs) is shown as text, never as markup.
func TestPagesEscapeServerText(t *testing.T) {
	u := newUI(t, uiOptions{})
	_, entryID := u.seedHostile()
	for _, path := range []string{"/", "/runs", "/runs/1", "/runs/1?fragment=tasks", "/dlq", "/dlq?id=1", "/dlq?status=open&class=http_5xx", "/flows/parcels", "/flows/parcels?run=1"} {
		t.Run(path, func(t *testing.T) {
			code, body, h := u.do("GET", path, "")
			if code != 200 {
				t.Fatalf("GET %s: %d\n%s", path, code, body)
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
			}
			for _, bad := range []string{"<script>window", "<img src=x", `onerror="window`} {
				if strings.Contains(body, bad) {
					t.Errorf("GET %s renders %q as markup", path, bad)
				}
			}
		})
	}
	_, body, _ := u.do("GET", "/dlq", "")
	for _, want := range []string{"HTTP 500: &lt;script&gt;window.__xss=1&lt;/script&gt;", "http_5xx"} {
		if !strings.Contains(body, want) {
			t.Errorf("/dlq lacks %q", want)
		}
	}
	_, body, _ = u.do("GET", "/runs/1", "")
	if !strings.Contains(body, "&lt;img src=x onerror=") {
		t.Errorf("/runs/1 does not show the run's error as text")
	}
	// The API's JSON escapes markup too (encoding/json writes < as \u003c).
	_, body, _ = u.do("GET", "/api/dlq/1", "")
	if strings.Contains(body, "<script>") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Errorf("/api/dlq/1: %s", body)
	}
	// The run's units as GeoJSON: two boxes, the dead one with its dead letter.
	_, body, _ = u.do("GET", "/api/runs/1/units", "")
	var fc struct {
		Type     string `json:"type"`
		Total    int64  `json:"total"`
		Features []struct {
			Geometry struct {
				Type string `json:"type"`
			} `json:"geometry"`
			Properties struct {
				Key        string `json:"key"`
				State      string `json:"state"`
				DeadLetter int64  `json:"dead_letter"`
			} `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(body), &fc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if fc.Type != "FeatureCollection" || fc.Total != 2 || len(fc.Features) != 2 || fc.Features[0].Geometry.Type != "Polygon" {
		t.Fatalf("units: %s", body)
	}
	if p := fc.Features[1].Properties; p.Key != "q.1" || p.State != "failed" || p.DeadLetter != entryID {
		t.Errorf("dead unit: %+v, want q.1 failed with dead letter %d", p, entryID)
	}
}

// TestAPIValidation: POST /api/runs refuses what geoflow run refuses, with its words.
func TestAPIValidation(t *testing.T) {
	u := newUI(t, uiOptions{})
	tests := []struct {
		name, body string
		code       int
		want       string
	}{
		{"bad bbox", `{"flow":"parcels","bbox":"1,2,3"}`, 400, `--bbox \"1,2,3\"`},
		{"bbox swapped", `{"flow":"parcels","bbox":[48.05,11.45,48.1,11.5],"bbox_crs":"EPSG:4326"}`, 0, ""},
		{"bbox not numbers", `{"flow":"parcels","bbox":["a",1,2,3]}`, 400, "not a number"},
		{"bad crs", `{"flow":"parcels","bbox":"11.45,48.05,11.5,48.1","bbox_crs":"EPSG:2056"}`, 400, `--bbox-crs \"EPSG:2056\": only EPSG:4326 and EPSG:3857`},
		{"unknown task", `{"flow":"parcels","tasks":["nope"]}`, 400, `--task \"nope\": flow \"parcels\" has no such task`},
		{"downstream without task", `{"flow":"parcels","with_downstream":true}`, 400, "--with-downstream needs --task"},
		{"unknown flow", `{"flow":"roads"}`, 404, `flow \"roads\"`},
		{"no flow", `{}`, 400, "name the flow"},
		{"unknown field", `{"flow":"parcels","bobx":"1,2,3,4"}`, 400, `unknown field \"bobx\"`},
		{"not JSON", `flow=parcels`, 400, "JSON body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := u.do("POST", "/api/runs", tt.body)
			if tt.code == 0 {
				return // accepted or refused by the run itself: only no crash matters
			}
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("POST %s: %d %s; want %d with %q", tt.body, code, body, tt.code, tt.want)
			}
		})
	}
	// A form post is refused before anything is read: a cross-site form cannot send JSON.
	code, body, _ := u.do("POST", "/api/runs", "", "Content-Type", "application/x-www-form-urlencoded")
	if code != http.StatusUnsupportedMediaType {
		t.Errorf("form POST: %d %s", code, body)
	}
	code, body, _ = u.do("POST", "/api/dlq/replay", `{}`)
	if code != 400 || !strings.Contains(body, "name what to replay") {
		t.Errorf("replay of nothing: %d %s", code, body)
	}
	code, body, _ = u.do("POST", "/api/dlq/replay", `{"ids":[42]}`)
	if code != 400 || !strings.Contains(body, "no dead letter 42") {
		t.Errorf("replay of a missing entry: %d %s", code, body)
	}
	code, body, _ = u.do("POST", "/api/dlq/discard", `{"ids":[42]}`)
	if code != 400 || !strings.Contains(body, "not discarded (no such entry, or not open): 42") {
		t.Errorf("discard of a missing entry: %d %s", code, body)
	}
}

// TestAPIRunAndTriage: a run started by the API is the CLI's run (a bbox run recorded
// with its area and trigger ui); its dead letters are replayed and discarded by the API.
func TestAPIRunAndTriage(t *testing.T) {
	u := newUI(t, uiOptions{failAt: []orb.Point{{11.47, 48.07}, {11.53, 48.13}}})
	code, body, h := u.do("POST", "/api/runs", `{"flow":"parcels"}`)
	if code != http.StatusAccepted || h.Get("Location") != "/api/runs/1" {
		t.Fatalf("POST /api/runs: %d %s", code, body)
	}
	run := u.waitRun(1)
	if run.Status != store.Failed || run.UnitsDead == 0 || run.Trigger != store.TriggerUI {
		t.Fatalf("run 1: %+v; want failed with dead units, trigger ui", run)
	}
	entries, err := u.db.ListDeadLetters(context.Background(), dlq.Filter{Status: dlq.StatusOpen})
	if err != nil || len(entries) < 2 {
		t.Fatalf("dead letters: %d, %v", len(entries), err)
	}
	// The metrics count them by class and task.
	_, metrics, _ := u.do("GET", "/metrics", "")
	if !strings.Contains(metrics, `geoflow_dead_letters_open{class="http_5xx",task="parcels"}`) {
		t.Errorf("/metrics lacks the dead letters:\n%s", metrics)
	}
	// And the pool's workers, as they report themselves (geoflow worker).
	testdb.Exec(t, u.dbURL, `INSERT INTO geoflow_workers (id, hostname, pid, concurrency, units_done, units_snoozed, in_flight)
		VALUES ('w-live', 'h', 1, 8, 7, 2, 3), ('w-gone', 'h', 2, 8, 5, 0, 0)`)
	testdb.Exec(t, u.dbURL, `UPDATE geoflow_workers SET stopped_at = now() WHERE id = 'w-gone'`)
	_, metrics, _ = u.do("GET", "/metrics", "")
	for _, want := range []string{`geoflow_pool_workers{state="alive"} 1`, `geoflow_pool_workers{state="stopped"} 1`,
		`geoflow_pool_worker_units_total{outcome="done",worker="w-live"} 7`, `geoflow_pool_worker_units_in_flight{worker="w-live"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `worker="w-gone"`) {
		t.Errorf("/metrics counts a stopped worker's units")
	}
	// Discard the first, replay the others once healed, waiting for the outcome.
	first := entries[0].ID
	code, body, _ = u.do("POST", "/api/dlq/discard", `{"ids":[`+itoa(first)+`]}`)
	if code != 200 || !strings.Contains(body, `"discarded": 1`) {
		t.Fatalf("discard: %d %s", code, body)
	}
	u.healed.Store(true)
	code, body, _ = u.do("POST", "/api/dlq/replay", `{"all":true,"filter":{"run":1},"wait":true}`)
	if code != 200 || !strings.Contains(body, `"ok": true`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	if n := u.count(`SELECT count(*) FROM geoflow_dlq WHERE status = 'open'`); n != 0 {
		t.Errorf("%d entries still open after the replay", n)
	}
	// The discarded unit's area is still missing; a bbox run over it through the API
	// fills it, and is recorded with that area.
	e := entries[0]
	bb := e.BBox
	code, body, _ = u.do("POST", "/api/runs", `{"flow":"parcels","bbox":[`+ftoa(bb.Min[0])+`,`+ftoa(bb.Min[1])+`,`+ftoa(bb.Max[0])+`,`+ftoa(bb.Max[1])+`]}`)
	if code != http.StatusAccepted {
		t.Fatalf("bbox run: %d %s", code, body)
	}
	if r := u.waitRun(2); r.Status != store.Done {
		t.Fatalf("run 2: %+v", r)
	}
	info, err := u.db.RunInfo(context.Background(), 2)
	if err != nil || info.Area == nil || !info.Area.Equal(*bb) {
		t.Errorf("run 2 area %v (%v), want %v", info.Area, err, bb)
	}
	if got, want := u.storedIn(harvestArea), int64(len(u.fx.FeaturesIn(harvestArea))); got != want {
		t.Errorf("%d features stored, want all %d", got, want)
	}
	// Each flow's latest run and its tasks by state, whichever process ran it: an
	// incomplete run recorded by another process shows as such.
	ctx := context.Background()
	short, err := u.db.StartRun(ctx, store.RunStart{Flow: "short"})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.db.SetTaskState(ctx, short.ID, "layer", "ogcapi", store.Incomplete, "incomplete: 3 features missing"); err != nil {
		t.Fatal(err)
	}
	// Two processes sent its requests: the figures per host are summed over them.
	const shortHost = "https://short.example:443"
	for _, x := range []store.Execution{
		{Worker: "w1", Hosts: []store.HostCount{{Host: shortHost, Requests: 7, Retries: 3, RateLimited: 2, WaitedMS: 1500, BreakerOpened: 1}}},
		{Worker: "w2", Hosts: []store.HostCount{{Host: shortHost, Requests: 3, Retries: 1, BreakerOpened: 1}}},
	} {
		if err := u.db.AddTaskExecution(ctx, short.ID, "layer", x); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := u.db.FinishRun(ctx, short.ID, store.Incomplete, ""); err != nil {
		t.Fatal(err)
	}
	short.Close()
	_, metrics, _ = u.do("GET", "/metrics", "")
	for _, want := range []string{`geoflow_flow_last_run{flow="parcels",status="done"} 1`, `geoflow_flow_last_run_tasks{flow="parcels",state="done"} 1`,
		`geoflow_flow_last_run{flow="short",status="incomplete"} 1`, `geoflow_flow_last_run_tasks{flow="short",state="incomplete"} 1`,
		`geoflow_flow_last_run_host_requests{flow="short",host="` + shortHost + `"} 10`,
		`geoflow_flow_last_run_host_retries{flow="short",host="` + shortHost + `"} 4`,
		`geoflow_flow_last_run_host_rate_limited{flow="short",host="` + shortHost + `"} 2`,
		`geoflow_flow_last_run_host_wait_seconds{flow="short",host="` + shortHost + `"} 1.5`,
		`geoflow_flow_last_run_host_breaker_opened{flow="short",host="` + shortHost + `"} 2`,
		`geoflow_flow_last_run_host_requests{flow="parcels",host="http://127.0.0.1:`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	if strings.Contains(metrics, `geoflow_flow_last_run_host_requests{flow="short",host="`+shortHost+`",worker`) {
		t.Errorf("/metrics labels the hosts' figures by process")
	}
	// The run's page and its API say the same, and split them by process.
	code, body, _ = u.do("GET", "/api/runs/"+itoa(short.ID), "")
	var got store.RunRecord
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Hosts) != 1 || got.Hosts[0].Requests != 10 ||
		len(got.Workers) != 2 || got.Workers[0].Worker != "w1" || got.Workers[1].Hosts[0].Requests != 3 {
		t.Errorf("GET /api/runs/%d: %d %s", short.ID, code, body)
	}
	code, body, _ = u.do("GET", "/runs/"+itoa(short.ID), "")
	for _, want := range []string{"Requests by host", shortHost, "By process", "summed over the processes"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("the run's page lacks %q (%d)", want, code)
		}
	}
}

// TestTokenAndCrossSite: with a token, nothing but the probes, the sign-in page and the
// static files answers without it; a replay POST without it is refused; the browser's session
// cookie comes from /login; state-changing requests from another site are refused.
func TestTokenAndCrossSite(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	u := newUI(t, uiOptions{token: token})
	u.seedHostile()
	bearer := []string{"Authorization", "Bearer " + token}

	code, body, _ := u.do("POST", "/api/dlq/replay", `{"ids":[1]}`)
	if code != http.StatusUnauthorized || !strings.Contains(body, "needs its token") {
		t.Errorf("replay POST without the token: %d %s", code, body)
	}
	if n := u.count(`SELECT count(*) FROM geoflow_dlq WHERE status = 'open'`); n != 1 {
		t.Errorf("the refused replay touched the entry: %d open", n)
	}
	code, _, _ = u.do("POST", "/api/dlq/discard", `{"ids":[1]}`, "Authorization", "Bearer wrong-token-wrong-token")
	if code != http.StatusUnauthorized {
		t.Errorf("discard with a wrong token: %d", code)
	}
	for _, path := range []string{"/api/runs", "/api/dlq", "/api/runs/1/units", "/api/flows"} {
		if code, _, _ := u.do("GET", path, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d", path, code)
		}
		if code, _, _ := u.do("GET", path, "", bearer...); code != 200 {
			t.Errorf("GET %s with the token: %d", path, code)
		}
	}
	code, _, h := u.do("GET", "/dlq", "")
	if code != http.StatusSeeOther || h.Get("Location") != "/login?next=%2Fdlq" {
		t.Errorf("page without the token: %d to %q, want the login page", code, h.Get("Location"))
	}
	for _, path := range []string{"/healthz", "/login"} {
		if code, _, _ := u.do("GET", path, ""); code != 200 {
			t.Errorf("GET %s: %d, want it open", path, code)
		}
	}
	form := func(tok string) (int, http.Header) {
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
			PostForm(u.srv.URL+"/login", url.Values{"token": {tok}, "next": {"//evil.example/x"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	if code, _ := form("nope"); code != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: %d", code)
	}
	code, h = form(token)
	cookie := h.Get("Set-Cookie")
	if code != http.StatusSeeOther || h.Get("Location") != "/" || !strings.Contains(cookie, "HttpOnly") ||
		!strings.Contains(cookie, "SameSite=Strict") || strings.Contains(cookie, token) {
		t.Fatalf("login: %d to %q, cookie %q", code, h.Get("Location"), cookie)
	}
	session := strings.SplitN(cookie, ";", 2)[0]
	if code, _, _ := u.do("GET", "/dlq", "", "Cookie", session); code != 200 {
		t.Errorf("page with the session cookie: %d", code)
	}
	// A page of another site posting with the browser's cookie is refused.
	code, body, _ = u.do("POST", "/api/dlq/discard", `{"ids":[1]}`, "Cookie", session, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if code != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
		t.Errorf("cross-site discard: %d %s", code, body)
	}
	code, body, _ = u.do("POST", "/api/dlq/discard", `{"ids":[1]}`, "Cookie", session, "Sec-Fetch-Site", "same-origin")
	if code != 200 || !strings.Contains(body, `"discarded": 1`) {
		t.Errorf("same-origin discard with the session: %d %s", code, body)
	}
}

// TestLoopbackOnlyWithoutToken: without a token the server answers to loopback host
// names only (a DNS name pointed at 127.0.0.1 by another site gets nothing), and it
// cannot be started on a public address.
func TestLoopbackOnlyWithoutToken(t *testing.T) {
	u := newUI(t, uiOptions{})
	if code, _, _ := u.do("GET", "/api/runs", "", "Host", "rebind.evil.example"); code != http.StatusMisdirectedRequest {
		t.Errorf("request for another host name: %d", code)
	}
	if code, _, _ := u.do("GET", "/api/runs", "", "Host", "localhost:8080"); code != 200 {
		t.Errorf("request for localhost: %d", code)
	}
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"localhost:8080", "", true},
		{"[::1]:8080", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"192.0.2.10:8080", "", false},
		{"0.0.0.0:8080", "short", false},
		{"0.0.0.0:8080", "a-long-enough-token", true},
	}
	for _, tt := range tests {
		err := server.CheckListen(tt.addr, tt.token)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListen(%q, %q) = %v, want ok %v", tt.addr, tt.token, err, tt.ok)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// TestBasemap: a flow with a tile task draws its stored tiles beneath its maps; only
// stored tiles inside the task's zoom range are served, by number.
func TestBasemap(t *testing.T) {
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	if err := os.MkdirAll(filepath.Join(dir, "3", "4", ""), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "3", "4", "2.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	u := newUI(t, uiOptions{tilesDir: dir})
	tests := []struct {
		path string
		code int
	}{
		{"/tiles/parcels/basemap/3/4/2", 200},
		{"/tiles/parcels/basemap/3/4/3", 204},   // not stored
		{"/tiles/parcels/basemap/2/1/1", 204},   // below the task's zoom range
		{"/tiles/parcels/basemap/3/9/2", 204},   // beyond the level
		{"/tiles/parcels/basemap/3/4/2a", 204},  // not a number
		{"/tiles/parcels/basemap/3/4/..", 307},  // cleaned by the mux before any handler
		{"/tiles/parcels/parcels/3/4/2", 404},   // not a tile task
		{"/tiles/roads/basemap/3/4/2", 404},     // no such flow
		{"/tiles/parcels/basemap/3/4/2/x", 404}, // no such route
	}
	for _, tt := range tests {
		code, body, h := u.do("GET", tt.path, "")
		if code != tt.code {
			t.Errorf("GET %s: %d, want %d", tt.path, code, tt.code)
		}
		if code == 200 && (body != string(png) || h.Get("Content-Type") != "image/png") {
			t.Errorf("GET %s: %q (%s)", tt.path, body, h.Get("Content-Type"))
		}
	}
	_, body, _ := u.do("GET", "/flows/parcels", "")
	if !strings.Contains(body, `data-basemap="/tiles/parcels/basemap/{z}/{x}/{y}" data-basemap-zoom="3,12"`) {
		t.Errorf("the flow's map has no basemap:\n%s", body)
	}
}

// TestRunPageNamesAdopter: a run that a worker adopted once its starting process was
// gone says so on its page and in the API; a run finished by its own process does not.
func TestRunPageNamesAdopter(t *testing.T) {
	u := newUI(t, uiOptions{})
	ctx := context.Background()
	run, err := u.db.StartRun(ctx, store.RunStart{Flow: "parcels", Distributed: true})
	if err != nil {
		t.Fatal(err)
	}
	run.Close() // its process died
	adopted, err := u.db.StartRun(ctx, store.RunStart{Flow: "parcels", Resume: true, RunID: run.ID, AdoptedBy: "worker w2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.db.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	adopted.Close()
	plain, _ := u.seedHostile()

	_, body, _ := u.do("GET", fmt.Sprintf("/runs/%d", run.ID), "")
	if !regexp.MustCompile(`finished by worker w2 \(adopted \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, after the starting process was gone\)`).MatchString(body) {
		t.Errorf("the adopted run's page does not name its adopter:\n%s", body)
	}
	_, body, _ = u.do("GET", fmt.Sprintf("/api/runs/%d", run.ID), "")
	var rec store.RunRecord
	if err := json.Unmarshal([]byte(body), &rec); err != nil || rec.FinishedBy != "worker w2" || rec.AdoptedAt == nil {
		t.Errorf("/api/runs/%d: %v, finished_by %q, adopted_at %v; want worker w2 and a time\n%s", run.ID, err, rec.FinishedBy, rec.AdoptedAt, body)
	}
	_, body, _ = u.do("GET", fmt.Sprintf("/runs/%d", plain), "")
	if strings.Contains(body, "adopted") || strings.Contains(body, "finished by") {
		t.Errorf("a run its own process finished names an adopter")
	}
}

// TestRunsListShowsArea: the runs list tells a run restricted to an area (geoflow run
// --bbox, or a rerun of an area from the UI) from a run of the whole flow.
func TestRunsListShowsArea(t *testing.T) {
	u := newUI(t, uiOptions{})
	ctx := context.Background()
	for _, area := range []*orb.Bound{nil, {Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.48, 48.08}}} {
		run, err := u.db.StartRun(ctx, store.RunStart{Flow: "parcels", Area: area})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.db.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
			t.Fatal(err)
		}
		run.Close()
	}
	for _, path := range []string{"/runs", "/flows/parcels", "/"} {
		_, body, _ := u.do("GET", path, "")
		if !strings.Contains(body, "<th>Area</th>") || !strings.Contains(body, `geoflow run --bbox 11.46,48.06,11.48,48.08">11.46,48.06,11.48,48.08</span>`) ||
			!strings.Contains(body, `<span class="muted">whole</span>`) {
			t.Errorf("GET %s does not show the runs' areas:\n%s", path, body)
		}
	}
	_, body, _ := u.do("GET", "/api/runs", "")
	var runs []struct {
		Area *[4]float64 `json:"area"`
	}
	if err := json.Unmarshal([]byte(body), &runs); err != nil || len(runs) != 2 || runs[0].Area == nil ||
		*runs[0].Area != [4]float64{11.46, 48.06, 11.48, 48.08} || runs[1].Area != nil || !strings.Contains(body, `"area": null`) {
		t.Errorf("/api/runs lacks the areas (%v): %s", err, body)
	}
}
