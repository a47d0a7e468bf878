package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

// lockedBuffer is a strings.Builder safe for the command's goroutine and the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// uiURL finds where geoflow ui (url=) or geoflow serve (listen=) serves, in its log.
var uiURL = regexp.MustCompile(`msg="web UI" url=http://(\S+)|msg=serving listen=(\S+)`)

// startUI runs the command of args (a geoflow ui or serve) in this process until ctx
// ends, waits for its web UI to listen, and returns its base URL, its log and its exit
// code to come.
func startUI(t *testing.T, ctx context.Context, args ...string) (string, *lockedBuffer, <-chan int) {
	t.Helper()
	done := make(chan int, 1)
	var out, errb lockedBuffer
	go func() { done <- cli.Main(ctx, args, &out, &errb) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m := uiURL.FindStringSubmatch(errb.String()); m != nil {
			return "http://" + strings.TrimSuffix(m[1]+m[2], "/"), &errb, done
		}
		select {
		case code := <-done:
			t.Fatalf("geoflow %s exited %d at start:\n%s", strings.Join(args, " "), code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("geoflow %s did not start:\n%s", strings.Join(args, " "), errb.String())
		}
	}
}

// TestUICommand: geoflow ui serves the pages and the API over each store without the
// scheduler, with a token when given one; a run started through its API is the CLI's run,
// and its units come back as GeoJSON; it stops on cancellation with exit 0.
func TestUICommand(t *testing.T) { eachStore(t, testUICommand) }

func testUICommand(t *testing.T, db string) {
	if code, _, errs := geoflow(t, nil, "--database", db, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	fx := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 300}))
	t.Cleanup(fx.Close)
	dir := t.TempDir()
	flow := `name: parcels
tasks:
  parcels:
    type: wfs
    url: ` + fx.URL + `/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: ui_parcels}
`
	if err := os.WriteFile(filepath.Join(dir, "parcels.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "a-token-of-twenty-chars"
	t.Setenv("GEOFLOW_UI_TOKEN", token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, errb, done := startUI(t, ctx, "--database", db, "ui", "--flows", dir, "--listen", "127.0.0.1:0")
	call := func(method, path, body string, auth bool) (int, string) {
		if auth {
			return uiCall(t, base, method, path, body, token)
		}
		return uiCall(t, base, method, path, body, "")
	}
	if code, _ := call("GET", "/api/runs", "", false); code != http.StatusUnauthorized {
		t.Errorf("GET /api/runs without the token: %d", code)
	}
	if code, _ := call("POST", "/api/runs", `{"flow":"parcels"}`, false); code != http.StatusUnauthorized {
		t.Errorf("POST /api/runs without the token: %d", code)
	}
	if code, _ := call("GET", "/metrics", "", false); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d, want 401", code)
	}
	if code, body := call("GET", "/metrics", "", true); code != http.StatusOK || !strings.Contains(body, "geoflow_ui_signin_failures_total") {
		t.Errorf("GET /metrics with the token: %d\n%.300s", code, body)
	}
	code, body := call("POST", "/api/runs", `{"flow":"parcels"}`, true)
	if code != http.StatusAccepted || !strings.Contains(body, `"run_id": 1`) {
		t.Fatalf("POST /api/runs: %d %s", code, body)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, body = call("GET", "/api/runs/1", "", true)
		if !strings.Contains(body, `"status": "running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run 1 still running: %s", body)
		}
	}
	if !strings.Contains(body, `"status": "done"`) || !strings.Contains(body, `"trigger": "ui"`) || !strings.Contains(body, `"features_inserted": 300`) {
		t.Errorf("run 1: %s", body)
	}
	code, body = call("GET", "/api/runs/1/units", "", true)
	if code != 200 || !strings.Contains(body, `"type":"FeatureCollection"`) || !strings.Contains(body, `"state":"done"`) || strings.Contains(body, `"state":"pending"`) {
		t.Errorf("units: %d %s", code, body)
	}
	checkServedTables(t, func(path string) (int, string) { return call("GET", path, "", true) }, 300)
	for _, path := range []string{"/", "/runs/1", "/flows/parcels", "/dlq", "/tables", "/tables/ui_parcels"} {
		if code, body := call("GET", path, "", true); code != 200 || !strings.Contains(body, "geoflow") {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("geoflow ui did not stop")
	}
}

// checkServedTables: the harvested table is listed, GDAL reads its vector tile as the
// UI serves it (saved where its z/x/y path says which tile it is) and its GeoPackage
// download, and the GeoJSON download holds every feature.
func checkServedTables(t *testing.T, get func(path string) (int, string), features int) {
	t.Helper()
	if code, body := get("/tables"); code != 200 || !strings.Contains(body, `href="/tables/ui_parcels"`) {
		t.Errorf("/tables: %d, lists ui_parcels: %v", code, strings.Contains(body, "ui_parcels"))
	}
	tile := maptile.At(orb.Point{11.5, 48.1}, 14)
	code, body := get(fmt.Sprintf("/vt/ui_parcels/%d/%d/%d.mvt", tile.Z, tile.X, tile.Y))
	if code != 200 {
		t.Fatalf("a tile: %d %.300s", code, body)
	}
	file := filepath.Join(t.TempDir(), "14", strconv.Itoa(int(tile.X)), strconv.Itoa(int(tile.Y))+".pbf")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ogrinfo", "-ro", "-al", file).CombinedOutput()
	if err != nil || !regexp.MustCompile(`Feature Count: [1-9]`).Match(out) || !strings.Contains(string(out), "parcel_id (String) = GF-") {
		t.Errorf("ogrinfo on a served tile: %v\n%.2000s", err, out)
	}
	t.Logf("ogrinfo -al %s: %s", file, regexp.MustCompile(`Feature Count: \d+`).Find(out))
	code, body = get("/api/tables/ui_parcels/features")
	var fc struct{ Features []json.RawMessage }
	if err := json.Unmarshal([]byte(body), &fc); code != 200 || err != nil || len(fc.Features) != features {
		t.Errorf("the GeoJSON download: %d, %d features (%v), want %d", code, len(fc.Features), err, features)
	}
	code, body = get("/api/tables/ui_parcels/features?format=gpkg")
	gpkg := filepath.Join(t.TempDir(), "ui_parcels.gpkg")
	if err := os.WriteFile(gpkg, []byte(body), 0o644); code != 200 || err != nil {
		t.Fatalf("the GeoPackage download: %d %v", code, err)
	}
	if out, err := exec.Command("ogrinfo", "-ro", "-so", "-al", gpkg).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), fmt.Sprintf("Feature Count: %d", features)) {
		t.Errorf("ogrinfo on the GeoPackage download: %v\n%s", err, out)
	}
}

// TestMetricsPublicFlag: geoflow ui and geoflow serve with a token ask a scraper for it
// on /metrics, unless --metrics-public.
func TestMetricsPublicFlag(t *testing.T) {
	const token = "a-token-of-twenty-chars"
	t.Setenv("GEOFLOW_UI_TOKEN", token)
	gpkg := filepath.Join(t.TempDir(), "metrics.gpkg")
	if code, _, errs := geoflow(t, nil, "--database", gpkg, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"ui", []string{"ui"}, http.StatusUnauthorized},
		{"ui --metrics-public", []string{"ui", "--metrics-public"}, http.StatusOK},
		{"serve", []string{"serve"}, http.StatusUnauthorized},
		{"serve --metrics-public", []string{"serve", "--metrics-public"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			args := append([]string{"--database", gpkg}, tt.args...)
			base, _, done := startUI(t, ctx, append(args, "--flows", t.TempDir(), "--listen", "127.0.0.1:0")...)
			if code, body := uiCall(t, base, "GET", "/metrics", "", ""); code != tt.code {
				t.Errorf("GET /metrics without the token: %d, want %d\n%.300s", code, tt.code, body)
			}
			if code, _ := uiCall(t, base, "GET", "/metrics", "", token); code != http.StatusOK {
				t.Errorf("GET /metrics with the token: %d", code)
			}
			cancel()
			<-done
		})
	}
}

// uiCall sends a request to a geoflow ui at base, with the bearer token when one is given.
func uiCall(t *testing.T, base, method, path, body, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUIStoreNameHidesCredentials: the header of every page and the start-up log name
// the database as host:port/dbname, whatever credentials its connection string holds
// (in the userinfo, in query parameters, quoted in key=value pairs); the sign-in page,
// open to anyone, names no store at all. A GeoPackage is named by its file.
func TestUIStoreNameHidesCredentials(t *testing.T) {
	const token = "a-token-of-twenty-chars"
	t.Setenv("GEOFLOW_UI_TOKEN", token)
	db := testdb.URL(t)
	if code, _, errs := geoflow(t, nil, "--database", db, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	gpkg := filepath.Join(t.TempDir(), "ui.gpkg")
	if code, _, errs := geoflow(t, nil, "--database", gpkg, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	tests := []struct{ name, loc, want string }{
		{"URL", "postgres://postgres:hunter2-user@" + u.Host + "/" + name + "?sslmode=disable&password=hunter2-query&sslpassword=hunter2-ssl",
			u.Host + "/" + name},
		{"key=value", "host=" + u.Hostname() + " port=" + u.Port() + " dbname=" + name + " user=postgres password='hunter2 wordsecret' sslmode=disable",
			u.Host + "/" + name},
		{"GeoPackage", gpkg, gpkg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			base, log, done := startUI(t, ctx, "--database", tt.loc, "ui", "--flows", t.TempDir(), "--listen", "127.0.0.1:0")
			_, home := uiCall(t, base, "GET", "/", "", token)
			_, login := uiCall(t, base, "GET", "/login", "", "")
			if !strings.Contains(home, `<span class="where">`+tt.want+`</span>`) {
				t.Errorf("the header does not name the store %s:\n%s", tt.want, home)
			}
			if strings.Contains(login, tt.want) {
				t.Errorf("the sign-in page names the store:\n%s", login)
			}
			cancel()
			<-done
			if !strings.Contains(log.String(), "store="+tt.want) {
				t.Errorf("the start-up log does not name the store %s:\n%s", tt.want, log)
			}
			for what, text := range map[string]string{"overview": home, "sign-in page": login, "log": log.String()} {
				for _, secret := range []string{"hunter2", "wordsecret"} {
					if strings.Contains(text, secret) {
						t.Errorf("the %s shows %q:\n%s", what, secret, text)
					}
				}
			}
		})
	}
}

// TestUIDatabaseErrorHidesCredentials: a --database that names no store is refused
// naming it, without the credentials it holds.
func TestUIDatabaseErrorHidesCredentials(t *testing.T) {
	for _, loc := range []string{
		"mysql://geoflow:hunter2@db.example.com/geoflow?password=hunter2-query&sslpassword=hunter2-ssl",
		"gpkg://geoflow:hunter2@db.example.com/x.gpkg",
		"host=db.example.com password='hunter2 wordsecret' options=x://y",
		"host=db.example.com sslpassword=hunter2 options=x://y",
	} {
		code, _, errs := geoflow(t, nil, "--database", loc, "ui")
		if code != cli.ExitError || !strings.Contains(errs, "db.example.com") {
			t.Errorf("--database %s: exit %d, want 1 naming the host:\n%s", loc, code, errs)
		}
		for _, secret := range []string{"hunter2", "wordsecret"} {
			if strings.Contains(errs, secret) {
				t.Errorf("--database: the error shows %q:\n%s", secret, errs)
			}
		}
	}
}

// TestUIShutdownOrder: on a signal, geoflow ui and geoflow serve stop in order: the
// run started from the UI is told to stop, new runs are refused with a 503 that says
// why while the server still answers, the run is recorded (not left running) within
// --grace, and only then does the process exit, with 0.
func TestUIShutdownOrder(t *testing.T) {
	for _, command := range []string{"ui", "serve"} {
		t.Run(command, func(t *testing.T) {
			eachStore(t, func(t *testing.T, db string) { testShutdownOrder(t, db, command) })
		})
	}
}

func testShutdownOrder(t *testing.T, db, command string) {
	t.Setenv("GEOFLOW_UI_TOKEN", "")
	if code, _, errs := geoflow(t, nil, "--database", db, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	var inflight atomic.Int64
	wfs := wfsserver.New(wfsserver.Options{Features: 300, Latency: time.Second})
	fx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Add(-1)
		wfs.ServeHTTP(w, r)
	}))
	t.Cleanup(fx.Close)
	dir := t.TempDir()
	flow := "name: parcels\ntasks:\n  parcels:\n    type: wfs\n    url: " + fx.URL + "/wfs\n    typename: gf:parcels\n" +
		"    bbox: [11.45, 48.05, 11.55, 48.15]\n    target: {table: stop_parcels}\n"
	if err := os.WriteFile(filepath.Join(dir, "parcels.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	const grace = 4 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, log, done := startUI(t, ctx, "--database", db, command, "--flows", dir, "--listen", "127.0.0.1:0", "--grace", grace.String())
	if code, body := uiCall(t, base, "POST", "/api/runs", `{"flow":"parcels"}`, ""); code != http.StatusAccepted {
		t.Fatalf("POST /api/runs: %d %s", code, body)
	}
	// Signal once the run's units are being fetched (each request takes a second).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := uiCall(t, base, "GET", "/api/runs/1", "", "")
		var run store.RunRecord
		if err := json.Unmarshal([]byte(body), &run); err != nil {
			t.Fatalf("GET /api/runs/1: %v\n%s", err, body)
		}
		if run.UnitsTotal > 0 && inflight.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run fetched no unit within 20s: %s\n%s", body, log)
		}
	}

	cancel()
	stopped := time.Now()
	refused := false
	for !refused && time.Since(stopped) < grace {
		req, _ := http.NewRequest("POST", base+"/api/runs", strings.NewReader(`{"flow":"parcels"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST /api/runs while stopping: %v (the server stopped answering before the run was recorded)\n%s", err, log)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "shutting down"):
			refused = true
		case resp.StatusCode == http.StatusAccepted:
			t.Fatalf("POST /api/runs after the signal started a run: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !refused {
		t.Errorf("no POST /api/runs was refused with 503 while stopping")
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, log)
		}
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("geoflow %s did not stop within --grace\n%s", command, log)
	}
	if took := time.Since(stopped); took > grace+2*time.Second {
		t.Errorf("stopping took %v, --grace is %v", took, grace)
	}
	if n := testdb.Count(t, db, `SELECT count(*) FROM geoflow_units WHERE state = 'done'`); n == 0 {
		t.Errorf("no unit recorded done: the units in flight at the signal did not get their grace\n%s", log)
	}
	if n := testdb.Count(t, db, `SELECT count(*) FROM geoflow_runs WHERE status = 'running'`); n != 0 {
		t.Errorf("%d runs left recorded running after the exit\n%s", n, log)
	}
	if n := testdb.Count(t, db, `SELECT count(*) FROM geoflow_runs`); n != 1 {
		t.Errorf("%d runs recorded, want the one started before the signal", n)
	}
}

// TestUITilePyramid: a tile pyramid a flow keeps in its GeoPackage is listed among the
// tables, served as raster tiles (/rt/), and drawn beneath the maps of its flow.
func TestUITilePyramid(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tiles.gpkg")
	tiles := httptest.NewServer(tileserver.New(tileserver.Options{}))
	t.Cleanup(tiles.Close)
	dir := t.TempDir()
	flow := `name: basemap
tasks:
  basemap:
    type: tiles
    url: ` + tileserver.TileURL(tiles.URL) + `
    bbox: [11.45, 48.05, 11.55, 48.15]
    zoom: [11, 12]
    target: {storage: geopackage, table: osm}
`
	if err := os.WriteFile(filepath.Join(dir, "basemap.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := geoflow(t, nil, "--database", db, "run", filepath.Join(dir, "basemap.yaml")); code != 0 {
		t.Fatalf("geoflow run: %s", errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _, _ := startUI(t, ctx, "--database", db, "ui", "--flows", dir, "--listen", "127.0.0.1:0")
	get := func(path string) (int, string) { return uiCall(t, base, "GET", path, "", "") }
	if code, body := get("/tables"); code != 200 || !strings.Contains(body, `href="/tables/osm"`) || !strings.Contains(body, "tiles, zoom 11–12") {
		t.Errorf("/tables: %d, lists the pyramid osm: %v", code, strings.Contains(body, "/tables/osm"))
	}
	if code, body := get("/tables/osm"); code != 200 || !strings.Contains(body, `data-kind="tiles"`) {
		t.Errorf("/tables/osm: %d", code)
	}
	tile := maptile.At(orb.Point{11.5, 48.1}, 12)
	code, body := get(fmt.Sprintf("/rt/osm/%d/%d/%d", tile.Z, tile.X, tile.Y))
	if code != 200 || !strings.HasPrefix(body, "\x89PNG") {
		t.Errorf("/rt/osm/%d/%d/%d: %d, %d bytes", tile.Z, tile.X, tile.Y, code, len(body))
	}
	if code, _ := get("/rt/osm/3/0/0"); code != http.StatusNoContent {
		t.Errorf("a tile the pyramid does not hold: %d, want 204", code)
	}
	if code, _ := get("/vt/osm/12/0/0.mvt"); code != http.StatusNotFound {
		t.Errorf("vector tiles of a pyramid: %d, want 404", code)
	}
	if _, body := get("/flows/basemap"); !strings.Contains(body, `data-basemap="/rt/osm/{z}/{x}/{y}"`) {
		t.Errorf("the flow's map does not draw its pyramid beneath")
	}
}
