package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost posts to the server of u over a connection of its own, with a body of size
// bytes of contentType: declared by Content-Length and never sent (the answer must not
// wait for it), or sent chunked while the answer is read (the server may answer and hang
// up before the end; the client's write errors are expected then). prefix starts the body.
func (u *ui) rawPost(path, contentType, prefix string, size int, chunked bool) (int, string) {
	u.t.Helper()
	addr := strings.TrimPrefix(u.srv.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		u.t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n", path, addr, contentType)
	if !chunked {
		if _, err := io.WriteString(conn, head+fmt.Sprintf("Content-Length: %d\r\n\r\n%s", size, prefix)); err != nil {
			u.t.Fatal(err)
		}
	} else {
		go func() {
			w := bufio.NewWriter(conn)
			fmt.Fprintf(w, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", head, len(prefix), prefix)
			chunk := strings.Repeat("a", 64<<10)
			for sent := len(prefix); sent < size; sent += len(chunk) {
				if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return
				}
			}
			fmt.Fprint(w, "0\r\n\r\n")
			w.Flush()
		}()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBodyLimit: a request body over 1 MiB is answered 413, saying so: at once when its
// Content-Length declares it, when the 1 MiB is read when it comes chunked; on the API
// and on the sign-in form. A body of 1 MiB exactly is read.
func TestBodyLimit(t *testing.T) {
	u := newUI(t, uiOptions{})
	const fourMB = 4 << 20
	tests := []struct {
		name, path, contentType, prefix string
		chunked                         bool
		want                            string
	}{
		{"run, Content-Length", "/api/runs", "application/json", "", false, "request body over 1 MiB: 4194304 bytes sent"},
		{"run, chunked", "/api/runs", "application/json", `{"flow":"`, true, "request body over 1 MiB: reading the request's JSON body: http: request body too large"},
		{"replay, chunked", "/api/dlq/replay", "application/json", `{"note":"`, true, "request body over 1 MiB"},
		{"sign-in, Content-Length", "/login", "application/x-www-form-urlencoded", "", false, "request body over 1 MiB: 4194304 bytes sent"},
		{"sign-in, chunked", "/login", "application/x-www-form-urlencoded", "next=%2F&token=", true, "request body over 1 MiB: http: request body too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := u.rawPost(tt.path, tt.contentType, tt.prefix, fourMB, tt.chunked)
			if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, tt.want) {
				t.Errorf("POST %s, 4 MB: %d, want 413 saying %q:\n%.300s", tt.path, code, tt.want, body)
			}
		})
	}
	exact := `{"flow":"nope"}`
	exact += strings.Repeat(" ", 1<<20-len(exact))
	if code, body, _ := u.do("POST", "/api/runs", exact); code != http.StatusNotFound || !strings.Contains(body, "nope") {
		t.Errorf("POST /api/runs, 1 MiB exactly: %d %s, want the flow looked for (404)", code, body)
	}
}

// TestMetricsGuard: with a token, /metrics asks for it (a scraper sends it as a Bearer
// token) unless MetricsPublic; without a token (loopback) it is open.
func TestMetricsGuard(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	tests := []struct {
		name   string
		o      uiOptions
		header []string
		code   int
	}{
		{"token, none sent", uiOptions{token: token}, nil, http.StatusUnauthorized},
		{"token, a wrong one sent", uiOptions{token: token}, []string{"Authorization", "Bearer wrong-token-wrong-token"}, http.StatusUnauthorized},
		{"token, sent", uiOptions{token: token}, []string{"Authorization", "Bearer " + token}, http.StatusOK},
		{"token and MetricsPublic, none sent", uiOptions{token: token, metricsPublic: true}, nil, http.StatusOK},
		{"no token (loopback), none sent", uiOptions{}, nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUI(t, tt.o)
			code, body, _ := u.do("GET", "/metrics", "", tt.header...)
			if code != tt.code {
				t.Fatalf("GET /metrics: %d, want %d\n%.300s", code, tt.code, body)
			}
			if code == http.StatusOK && !strings.Contains(body, "geoflow_ui_signin_failures_total") {
				t.Errorf("GET /metrics: no sign-in counts:\n%.300s", body)
			}
		})
	}
}
