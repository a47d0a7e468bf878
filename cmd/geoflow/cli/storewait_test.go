package cli_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// TestStoreWaitDiskFull: the disk under a GeoPackage target fills up in the middle of a
// harvest (a small tmpfs) and stays full. The run waits for it with a backoff that grows,
// logs the outage when it starts and when it gives up (not once per fault), stops after
// the flow's store_wait with exit code 4, and is recorded as interrupted, not crashed. A
// resume once the disk has room stores every feature once.
func TestStoreWaitDiskFull(t *testing.T) {
	disk := testdb.Tmpfs(t, "3m")
	db := filepath.Join(disk, "geoflow.gpkg")
	const features = 6000
	fx := wfsserver.New(wfsserver.Options{Features: features, CountDefault: 500, ImplementsSorting: true})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	path := writeFlow(t, `name: diskfull
store_wait: 3s
defaults:
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: `+srv.URL+`/wfs
    typename: gf:parcels
    target: {table: parcels}
`)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	start := time.Now()
	code, out, errs := geoflow(t, env, "run", path, "--progress", "off", "--log-level", "debug")
	elapsed := time.Since(start)
	if code != cli.ExitStoreDown || !strings.Contains(errs, "geoflow run "+path+" --resume") {
		t.Fatalf("run on a full disk: exit %d, want %d with how to resume\n%s%s", code, cli.ExitStoreDown, out, tail(errs, 30))
	}
	if elapsed > 30*time.Second {
		t.Errorf("the run took %s to give up on a store_wait of 3s", elapsed)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM geoflow_runs WHERE status = 'interrupted'"); n != 1 {
		t.Errorf("%d runs recorded interrupted, want 1: %v", n, testdb.Query(t, db, "SELECT id, status FROM geoflow_runs"))
	}
	checkOutageLog(t, errs)
	if n := testdb.Count(t, db, "SELECT count(*) FROM geoflow_dlq"); n != 0 || strings.Contains(errs, `msg="unit failed"`) {
		t.Errorf("%d dead letters, want none: the store's outage is not the units' failure\n%s", n, tail(errs, 30))
	}

	testdb.ResizeTmpfs(t, disk, "64m")
	code, out, errs = geoflow(t, env, "run", path, "--resume", "--progress", "off", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("resume with room on the disk: exit %d\n%s%s", code, out, errs)
	}
	rows := testdb.Count(t, db, "SELECT count(*) FROM parcels")
	distinct := testdb.Count(t, db, "SELECT count(DISTINCT gf_feature_id) FROM parcels")
	if rows != features || distinct != features {
		t.Errorf("after the resume: %d rows, %d distinct features, want %d of each", rows, distinct, features)
	}
}

// TestStoreWaitDatabaseDown: PostgreSQL goes away in the middle of a harvest (every
// connection to it is cut and new ones are refused, as when its server stops) and stays
// away. The run waits with a backoff that grows, logs the outage once, and stops after
// --store-wait with exit code 4; it cannot record its end in a database that is down, so
// it says how to resume, and a resume once the database is back stores every feature once.
func TestStoreWaitDatabaseDown(t *testing.T) {
	direct := testdb.URL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	px := newTCPProxy(t, u.Host)
	u.Host = px.addr()
	db := u.String()
	const features = 3000
	fx := wfsserver.New(wfsserver.Options{Features: features, CountDefault: 200, ImplementsSorting: true})
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.URL.Query().Get("REQUEST"), "GetFeature") && r.URL.Query().Get("RESULTTYPE") == "" {
			if pages.Add(1) == 4 { // a few units in: the database goes away
				px.setDown(true)
			}
		}
		fx.ServeHTTP(w, r)
	}))
	defer srv.Close()
	path := writeFlow(t, `name: dbdown
defaults:
  rate_limit: {concurrency: 2}
tasks:
  parcels:
    type: wfs
    url: `+srv.URL+`/wfs
    typename: gf:parcels
    target: {table: parcels}
`)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	start := time.Now()
	code, out, errs := geoflow(t, env, "run", path, "--progress", "off", "--log-level", "debug", "--store-wait", "3s")
	elapsed := time.Since(start)
	if !px.isDown() {
		t.Fatalf("the run ended before the database went away: exit %d\n%s%s", code, out, tail(errs, 30))
	}
	if code != cli.ExitStoreDown || !strings.Contains(errs, "geoflow run "+path+" --resume") {
		t.Fatalf("run with the database down: exit %d, want %d with how to resume\n%s%s", code, cli.ExitStoreDown, out, tail(errs, 30))
	}
	if elapsed > 30*time.Second {
		t.Errorf("the run took %s to give up on --store-wait 3s", elapsed)
	}
	checkOutageLog(t, errs)
	if n := strings.Count(errs, "\n") - strings.Count(errs, "level=DEBUG"); n > 30 {
		t.Errorf("%d log lines for one outage:\n%s", n, tail(errs, 40))
	}

	px.setDown(false)
	code, out, errs = geoflow(t, env, "run", path, "--resume", "--progress", "off", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("resume with the database back: exit %d\n%s%s", code, out, errs)
	}
	rows := testdb.Count(t, direct, "SELECT count(*) FROM parcels")
	distinct := testdb.Count(t, direct, "SELECT count(DISTINCT gf_feature_id) FROM parcels")
	if rows != features || distinct != features {
		t.Errorf("after the resume: %d rows, %d distinct features, want %d of each", rows, distinct, features)
	}
}

var probeRE = regexp.MustCompile(`msg="probing the store".* probe=(\d+) probe_in=(\S+)`)

// checkOutageLog checks what a run that gave up on its store logged: at info level and
// up, the outage's start, at most a few flaps, and its end, never a line per fault; and,
// at debug level, probes whose waits grow within each outage (the last one is cut short
// by the store wait's end).
func checkOutageLog(t *testing.T, errs string) {
	t.Helper()
	var about []string
	for _, line := range strings.Split(errs, "\n") {
		if strings.Contains(line, "level=DEBUG") || !strings.Contains(line, "store") {
			continue
		}
		about = append(about, line)
	}
	down := strings.Count(errs, `msg="the store failed`)
	back := strings.Count(errs, `msg="the store answers again`)
	gone := strings.Count(errs, `msg="the store stayed down`)
	if down < 1 || gone != 1 || back != down-1 || len(about) > 8 {
		t.Errorf("%d lines about the store (%d down, %d back, %d gave up): want the outage logged once per change of state:\n%s",
			len(about), down, back, gone, strings.Join(about, "\n"))
	}
	var outages [][]time.Duration
	for _, m := range probeRE.FindAllStringSubmatch(errs, -1) {
		d, err := time.ParseDuration(m[2])
		if err != nil {
			t.Fatalf("probe_in=%s: %v", m[2], err)
		}
		if m[1] == "1" {
			outages = append(outages, nil)
		}
		if len(outages) == 0 {
			t.Fatalf("probe %s logged before the first of its outage", m[1])
		}
		outages[len(outages)-1] = append(outages[len(outages)-1], d)
	}
	if len(outages) == 0 || len(outages) != down {
		t.Fatalf("%d outages probed, %d logged", len(outages), down)
	}
	last := outages[len(outages)-1]
	if len(last) < 3 || len(last) > 12 {
		t.Errorf("the last outage was probed %d times in 3s (%v): want a backoff from 250ms, doubling", len(last), last)
	}
	for _, waits := range outages {
		for i := 1; i < len(waits)-1; i++ {
			if waits[i] < waits[i-1] {
				t.Errorf("the waits between probes shrank: %v", waits)
				break
			}
		}
	}
	t.Logf("waits before each probe of the store, per outage: %v", outages)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"... " + strconv.Itoa(len(lines)-n) + " lines before"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// tcpProxy forwards connections to a server and can play it going down: every open
// connection is cut and new ones are refused (closed at once), as a stopped PostgreSQL
// does, until it is set up again.
type tcpProxy struct {
	ln     net.Listener
	target string
	down   atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setDown(true) })
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) isDown() bool { return p.down.Load() }

// setDown takes the server away (cutting every connection) or brings it back.
func (p *tcpProxy) setDown(down bool) {
	p.down.Store(down)
	if !down {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if p.down.Load() {
			c.Close()
			continue
		}
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down.Load() {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// TestStoreWaitSignal: SIGTERM while PostgreSQL is away and the store wait (the default,
// 10m) is far from spent. The run stops within its grace, exits 143 saying how to resume
// (its end cannot be recorded in a database that is down), and a resume once the database
// is back stores every feature once.
func TestStoreWaitSignal(t *testing.T) {
	bin := buildGeoflow(t)
	direct := testdb.URL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	px := newTCPProxy(t, u.Host)
	u.Host = px.addr()
	db := u.String()
	const features = 3000
	fx := wfsserver.New(wfsserver.Options{Features: features, CountDefault: 200, ImplementsSorting: true})
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.URL.Query().Get("REQUEST"), "GetFeature") && r.URL.Query().Get("RESULTTYPE") == "" {
			if pages.Add(1) == 4 {
				px.setDown(true)
			}
		}
		fx.ServeHTTP(w, r)
	}))
	defer srv.Close()
	path := writeFlow(t, `name: dbsignal
tasks:
  parcels:
    type: wfs
    url: `+srv.URL+`/wfs
    typename: gf:parcels
    target: {table: parcels}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", path, "--progress", "off", "--grace", "2s")
	cmd.Env = append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !px.isDown(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the database never went away\n%s", out.String())
		}
	}
	time.Sleep(time.Second) // the run is waiting for its store
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 || !strings.Contains(out.String(), "geoflow run "+path+" --resume") {
		t.Fatalf("SIGTERM while the database is away: %v, want exit 143 with how to resume\n%s", err, out.String())
	}
	if took > 15*time.Second {
		t.Errorf("the run took %s to stop after SIGTERM with --grace 2s\n%s", took, out.String())
	}
	t.Logf("stopped %s after SIGTERM", took.Round(time.Millisecond))
	if n := strings.Count(out.String(), `msg="the store failed`); n != 1 {
		t.Errorf("the outage logged %d times, want once\n%s", n, out.String())
	}

	px.setDown(false)
	code, o, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "run", path, "--resume", "--progress", "off", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("resume with the database back: exit %d\n%s%s", code, o, errs)
	}
	rows := testdb.Count(t, direct, "SELECT count(*) FROM parcels")
	distinct := testdb.Count(t, direct, "SELECT count(DISTINCT gf_feature_id) FROM parcels")
	if rows != features || distinct != features {
		t.Errorf("after the resume: %d rows, %d distinct features, want %d of each", rows, distinct, features)
	}
}
