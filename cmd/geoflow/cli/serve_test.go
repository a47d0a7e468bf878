package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
)

func scheduledFlow(name, schedule, wfsURL string) string {
	return fmt.Sprintf(`name: %s
schedule: %q
tasks:
  parcels:
    type: wfs
    url: %s/wfs
    typename: parcels
    target: {table: %s}
`, name, schedule, wfsURL, name)
}

type serveProc struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error
	log    *strings.Builder
}

var listenRE = regexp.MustCompile(`msg=serving listen=(\S+)`)

// startServe starts geoflow serve as a subprocess and waits until it listens.
func startServe(t *testing.T, bin, db string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, exited: make(chan error, 1), log: &strings.Builder{}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.log.WriteString(line + "\n")
			if m := listenRE.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case p.addr = <-addr:
	case err := <-p.exited:
		t.Fatalf("geoflow serve exited at start: %v\n%s", err, p.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("geoflow serve did not listen within 30s\n%s", p.log)
	}
	return p
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, resp.StatusCode, b)
	}
	return string(b)
}

// Two geoflow serve processes over one database: every fire runs once, the endpoints
// answer, and SIGTERM stops each within its grace period with exit code 0.
func TestServeTwoInstancesAndSIGTERM(t *testing.T) {
	db := testdb.URL(t)
	bin := buildGeoflow(t)
	wfsSrv := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 200}))
	defer wfsSrv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "parcels.yaml"), []byte(scheduledFlow("parcels", "@every 1s", wfsSrv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	const grace = 4 * time.Second
	a := startServe(t, bin, db, "--flows", dir, "--grace", grace.String(), "--instance", "a")
	b := startServe(t, bin, db, "--flows", dir, "--grace", grace.String(), "--instance", "b")

	deadline := time.Now().Add(20 * time.Second)
	for testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE status = 'done'`) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 4 runs done in 20s\n--- a:\n%s--- b:\n%s", a.log, b.log)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if body := httpGet(t, "http://"+a.addr+"/readyz"); !strings.Contains(body, "ready") {
		t.Errorf("/readyz: %s", body)
	}
	var fl []map[string]any
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+b.addr+"/api/flows")), &fl); err != nil || len(fl) != 1 ||
		fl[0]["name"] != "parcels" || len(fl[0]["next_fires"].([]any)) != 3 {
		t.Errorf("/api/flows: %v %v", fl, err)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+a.addr+"/api/runs")), &runs); err != nil || len(runs) < 4 {
		t.Fatalf("/api/runs: %v %v", runs, err)
	}
	id := int64(runs[len(runs)-1]["id"].(float64))
	if body := httpGet(t, fmt.Sprintf("http://%s/api/runs/%d", b.addr, id)); !strings.Contains(body, `"tasks"`) {
		t.Errorf("/api/runs/%d: %s", id, body)
	}
	// Each process exposes the metrics of the runs it did: poll both.
	var metrics string
	for _, p := range []*serveProc{a, b} {
		metrics += httpGet(t, "http://"+p.addr+"/metrics")
	}
	for _, w := range []string{`geoflow_runs_total{flow="parcels",status="done"}`, "geoflow_run_duration_seconds_bucket",
		`geoflow_features_written_total{flow="parcels",result="inserted"}`, "geoflow_http_requests_total",
		"geoflow_schedule_fires_total", "geoflow_api_requests_total", "go_goroutines"} {
		if !strings.Contains(metrics, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}

	for _, p := range []*serveProc{a, b} {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range map[string]*serveProc{"a": a, "b": b} {
		select {
		case err := <-p.exited:
			if err != nil {
				t.Errorf("instance %s: %v (want exit 0)\n%s", name, err, p.log)
			}
		case <-time.After(grace + time.Second):
			t.Errorf("instance %s did not stop within its grace period %v\n%s", name, grace, p.log)
		}
	}

	total := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs`)
	if n := testdb.Int64(t, db, `SELECT count(DISTINCT scheduled_for) FROM geoflow_runs`); n != total {
		t.Errorf("%d runs for %d fire times: a fire ran twice", total, n)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE status <> 'done' OR trigger <> 'schedule'`); n != 0 {
		t.Errorf("%d runs not done, or not by the schedule", n)
	}
	code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "runs", "list", "--flow", "parcels", "--json")
	if code != 0 {
		t.Fatalf("runs list: exit %d\n%s", code, errs)
	}
	var listed []store.RunRecord
	if err := json.Unmarshal([]byte(out), &listed); err != nil || int64(len(listed)) != total {
		t.Errorf("runs list --json: %d runs (want %d), %v", len(listed), total, err)
	}
}

func TestServeBadFlags(t *testing.T) {
	t.Setenv("GEOFLOW_UI_TOKEN", "")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no flows dir", args: []string{"serve", "--flows", "/nonexistent/flows"}, want: "is not a directory"},
		{name: "zero grace", args: []string{"serve", "--grace", "0s"}, want: "--grace must be above 0"},
		// A UI reachable from other machines without a token is refused before anything starts.
		{name: "public listen, no token", args: []string{"serve", "--flows", dir, "--listen", "0.0.0.0:0"}, want: "is reachable from other machines: set --token"},
		{name: "all interfaces, no token", args: []string{"serve", "--flows", dir, "--listen", ":8080"}, want: "set --token"},
		{name: "short token", args: []string{"serve", "--flows", dir, "--listen", "0.0.0.0:0", "--token", "abc"}, want: "--token is too short: at least 16 characters"},
		{name: "ui public listen, no token", args: []string{"ui", "--listen", "0.0.0.0:0"}, want: "is reachable from other machines: set --token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := geoflow(t, nil, tt.args...)
			if code != cli.ExitError || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, cli.ExitError, tt.want)
			}
		})
	}
}

// serve stops cleanly on cancellation (SIGTERM in main) with exit code 0, in-process.
func TestServeStopsOnCancel(t *testing.T) {
	db := testdb.URL(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.yaml"), []byte(scheduledFlow("h", "@hourly", "http://127.0.0.1:1")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb lockedBuffer
	go func() {
		done <- cli.Main(ctx, []string{"--database", db, "serve", "--flows", dir, "--listen", "127.0.0.1:0"}, &out, &errb)
	}()
	// Cancelled once it serves: a loaded machine may take more than a second to migrate.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(errb.String(), "msg=serving") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(errb.String(), `msg="flow scheduled" flow=h`) {
		t.Errorf("log lacks the scheduled flow:\n%s", errb.String())
	}
}

func TestScheduleList(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nightly.yaml", strings.Replace(scheduledFlow("nightly", "0 2 * * *", "http://x"), "tasks:", "timezone: Europe/Berlin\ntasks:", 1))
	write("often.yaml", scheduledFlow("often", "@every 15m", "http://x"))
	write("manual.yaml", "name: manual\ntasks:\n  a: {type: wfs, url: http://x/wfs, typename: t, target: {table: a}}\n")

	code, out, errs := geoflow(t, nil, "schedule", "list", "--flows", dir, "--wide")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "FLOW") || !strings.HasPrefix(lines[1], "nightly") || !strings.HasPrefix(lines[2], "often") {
		t.Fatalf("schedule list:\n%s", out)
	}
	if !strings.Contains(lines[1], "Europe/Berlin") || strings.Count(lines[1], " CE") != 3 || !strings.Contains(lines[1], "02:00:00 CE") {
		t.Errorf("nightly is not listed with 3 fire times at 02:00 Berlin time: %s", lines[1])
	}
	if strings.Count(lines[2], ":00 UTC") != 3 {
		t.Errorf("often is not listed with 3 fire times in UTC: %s", lines[2])
	}

	code, out, _ = geoflow(t, nil, "schedule", "list", "--flows", dir, "--json", "--next", "2")
	var infos []map[string]any
	if err := json.Unmarshal([]byte(out), &infos); code != 0 || err != nil || len(infos) != 2 || len(infos[0]["next_fires"].([]any)) != 2 {
		t.Errorf("--json: exit %d, %v, %s", code, err, out)
	}

	write("broken.yaml", "name: broken\nschedule: \"every night\"\ntasks:\n  a: {type: wfs, url: http://x/wfs, typename: t, target: {table: a}}\n")
	code, out, errs = geoflow(t, nil, "schedule", "list", "--flows", dir, "--wide")
	if code != cli.ExitError || !strings.Contains(errs, "broken.yaml:2:1: schedule:") || !strings.Contains(out, "nightly") {
		t.Errorf("with a broken flow: exit %d\n%s%s", code, out, errs)
	}
}

func TestRunsCommands(t *testing.T) {
	db := testdb.URL(t)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	if code, out, errs := geoflow(t, env, "runs", "list"); code != 0 || !strings.Contains(out, "no runs") {
		t.Fatalf("runs list on an empty database: exit %d\n%s%s", code, out, errs)
	}
	ctx := context.Background()
	st, err := postgis.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	for i, flow := range []string{"a", "b", "a"} {
		rs := store.RunStart{Flow: flow}
		if i == 2 {
			rs.Trigger, rs.ScheduledFor = "schedule", &at
		}
		run, err := st.StartRun(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		run.Close()
		if i < 2 {
			if _, err := st.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
				t.Fatal(err)
			}
		}
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		notWant  []string
	}{
		{name: "list", args: []string{"runs", "list", "--wide"}, want: []string{"ID", "TRIGGER", "SCHEDULED FOR", "schedule", "manual"}},
		{name: "by flow and status", args: []string{"runs", "list", "--flow", "a", "--status", "done"}, want: []string{"\n1 "}, notWant: []string{"\n3 ", "\n2 "}},
		{name: "json", args: []string{"runs", "list", "--json", "--limit", "1"}, want: []string{`"id": 3`, `"scheduled_for": "2025-06-01T02:00:00Z"`, `"finished_at": null`}, notWant: []string{`"id": 2`}},
		// Run 3 was started and let go without finishing: nobody holds it, it crashed.
		{name: "show", args: []string{"runs", "show", "3"}, want: []string{"scheduled for", "trigger        schedule", "status         crashed"}},
		{name: "show json", args: []string{"runs", "show", "1", "--json"}, want: []string{`"status": "done"`}},
		{name: "show missing", args: []string{"runs", "show", "42"}, wantCode: cli.ExitError},
		{name: "show bad id", args: []string{"runs", "show", "x"}, wantCode: cli.ExitError},
		{name: "bad limit", args: []string{"runs", "list", "--limit", "0"}, wantCode: cli.ExitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := geoflow(t, env, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}
