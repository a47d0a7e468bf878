package cli_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/testdb"
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

// TestUICommand: geoflow ui serves the pages and the API over a store without the
// scheduler, with a token when given one, and stops on cancellation with exit 0.
func TestUICommand(t *testing.T) {
	db := testdb.URL(t)
	if code, _, errs := geoflow(t, nil, "--database", db, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.yaml"), []byte(scheduledFlow("h", "@hourly", "http://127.0.0.1:1")), 0o644); err != nil {
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
	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/api/runs", false); code != http.StatusUnauthorized {
		t.Errorf("GET /api/runs without the token: %d", code)
	}
	if code, body := get("/", true); code != 200 || !strings.Contains(body, `href="/flows/h"`) {
		t.Errorf("GET / with the token: %d\n%s", code, body)
	}
	if code, body := get("/flows/h", true); code != 200 || !strings.Contains(body, "Run now") {
		t.Errorf("GET /flows/h: %d\n%s", code, body)
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
