package cli_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
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

var uiURL = regexp.MustCompile(`msg="web UI" url=(\S+)`)

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
	done := make(chan int, 1)
	var out, errb lockedBuffer
	go func() {
		done <- cli.Main(ctx, []string{"--database", db, "ui", "--flows", dir, "--listen", "127.0.0.1:0"}, &out, &errb)
	}()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(50 * time.Millisecond) {
		if m := uiURL.FindStringSubmatch(errb.String()); m != nil {
			base = strings.TrimSuffix(m[1], "/")
		} else if time.Now().After(deadline) {
			t.Fatalf("geoflow ui did not start:\n%s", errb.String())
		}
	}
	call := func(method, path, body string, auth bool) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if auth {
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
	if code, _ := call("GET", "/api/runs", "", false); code != http.StatusUnauthorized {
		t.Errorf("GET /api/runs without the token: %d", code)
	}
	if code, _ := call("POST", "/api/runs", `{"flow":"parcels"}`, false); code != http.StatusUnauthorized {
		t.Errorf("POST /api/runs without the token: %d", code)
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
	for _, path := range []string{"/", "/runs/1", "/flows/parcels", "/dlq"} {
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
