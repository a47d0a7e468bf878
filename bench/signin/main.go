// Command signin measures what a geoflow ui does when someone guesses its token: it
// starts the given binary's `geoflow ui --token` on loopback over a fresh GeoPackage,
// sends -attempts requests with wrong Bearer tokens as fast as it can from one client,
// then one request of each kind the guard must refuse (a 4 MB body to POST /api/runs,
// /metrics without the token), and prints what came back and how many log lines the
// attempts made.
//
//	go build -o bin/geoflow ./cmd/geoflow
//	go run ./bench/signin -geoflow bin/geoflow
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	bin := flag.String("geoflow", "bin/geoflow", "the geoflow binary to measure")
	attempts := flag.Int("attempts", 300, "wrong tokens to send")
	flag.Parse()
	if err := run(*bin, *attempts); err != nil {
		fmt.Fprintln(os.Stderr, "signin:", err)
		os.Exit(1)
	}
}

const token = "the-right-token-0123456789"

func run(bin string, attempts int) error {
	dir, err := os.MkdirTemp("", "signin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	db := filepath.Join(dir, "s.gpkg")
	if out, err := exec.Command(bin, "migrate", "up", "--database", db).CombinedOutput(); err != nil {
		return fmt.Errorf("geoflow migrate up: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log lines
	cmd := exec.CommandContext(ctx, bin, "ui", "--database", db, "--listen", addr, "--token", token)
	cmd.Stderr, cmd.Stdout = &log, &log
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	base := "http://" + addr
	if err := waitUp(base, &log); err != nil {
		return fmt.Errorf("%w\n%s", err, log.String())
	}
	// Checked first: once the guesses throttle this client, its right token waits too.
	big := append(append([]byte(`{"flow": "`), bytes.Repeat([]byte("x"), 4<<20)...), `"}`...)
	body := answer(post(base+"/api/runs", big))
	noToken, withToken := answer(get(base+"/metrics", "")), answer(get(base+"/metrics", token))
	before := log.count()
	codes, elapsed := guess(base, attempts)
	time.Sleep(200 * time.Millisecond) // let the last lines reach the log
	logged := log.since(before)
	fmt.Printf("%s: %d wrong tokens in %v: %s; %d log lines", bin, attempts, elapsed.Round(10*time.Millisecond), codes, len(logged))
	if leaked := strings.Count(strings.Join(logged, "\n"), "wrong-"); leaked > 0 {
		fmt.Printf(" (%d holding a token)", leaked)
	}
	fmt.Println()
	for _, l := range firstLast(logged) {
		fmt.Println("  log:", l)
	}
	fmt.Printf("  /metrics afterwards, from another client: %s\n", signinCounters(base))
	fmt.Printf("  POST /api/runs with a 4 MB body: %s\n", body)
	fmt.Printf("  GET /metrics without the token: %s\n", noToken)
	fmt.Printf("  GET /metrics with the token: %s\n", withToken)
	return nil
}

// guess sends n wrong tokens one after the other and counts the answers by status.
func guess(base string, n int) (string, time.Duration) {
	counts := map[int]int{}
	start := time.Now()
	for i := range n {
		resp, err := get(base+"/api/runs", fmt.Sprintf("wrong-%04d-token-abcdefgh", i))
		if err != nil {
			counts[0]++
			continue
		}
		counts[resp.StatusCode]++
		resp.Body.Close()
	}
	elapsed := time.Since(start)
	var codes []int
	for c := range counts {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d answered %d", counts[c], c))
	}
	return strings.Join(parts, ", "), elapsed
}

func get(u, bearer string) (*http.Response, error) {
	req, _ := http.NewRequest("GET", u, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return http.DefaultClient.Do(req)
}

// post sends body as curl does a large one: with Expect: 100-continue, so that a server
// that refuses it can say so before the body is sent.
func post(u string, body []byte) (*http.Response, error) {
	req, _ := http.NewRequest("POST", u, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Second}}
	return client.Do(req)
}

// answer is a response's status and the start of its body, on one line.
func answer(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 160))
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.Join(strings.Fields(string(b)), " "))
}

// waitUp waits for the server to answer and to have logged that it started.
func waitUp(base string, log *lines) error {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if strings.Contains(log.String(), `msg="web UI"`) {
				return nil
			}
		}
	}
	return fmt.Errorf("geoflow ui did not answer on %s", base)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func firstLast(l []string) []string {
	if len(l) <= 2 {
		return l
	}
	return []string{l[0], l[len(l)-1]}
}

// lines keeps what the process writes, a line at a time.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lines) all() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func (l *lines) count() int { return len(l.all()) }

func (l *lines) since(n int) []string { return l.all()[n:] }

// signinCounters reads the sign-in series of /metrics as another client (127.0.0.2: the
// guessing one is throttled, its right token too).
func signinCounters(base string) string {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "geoflow_ui_signin") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("%d, no sign-in series", resp.StatusCode)
	}
	return strings.Join(out, "; ")
}
