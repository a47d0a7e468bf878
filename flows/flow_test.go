package flows

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/retry"
)

var update = flag.Bool("update", false, "rewrite golden files")

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// TestInvalidFlows checks every testdata/invalid/*.yaml against its .golden list of errors.
func TestInvalidFlows(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid flows: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			_, err := Load(file, Options{Registry: testRegistry(), LookupEnv: env(map[string]string{"SET": "x"})})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load(%s) = %v, want a *ValidationError", file, err)
			}
			got := ve.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestValidFlow(t *testing.T) {
	src := `
name: parcels_${REGION:-de}
schedule: "0 2 * * *"
max_parallel_tasks: 2
defaults:
  retry: {max_attempts: 6, base_delay: 500ms, max_delay: 30s, jitter: full}
  rate_limit: {requests_per_second: 5, burst: 5, concurrency: 4}
  redirects: strip_credentials
tasks:
  a:
    type: fake
    url: ${URL}
    redirects: same_origin
    bbox: [5.5, 47.2, 15.1, 55.1]
    retry: {max_attempts: 3}
  b:
    type: other
    depends_on: [a]
    rate_limit: {concurrency: 8}
`
	f, err := Parse("x.yaml", []byte(src), Options{Registry: testRegistry(), LookupEnv: env(map[string]string{"URL": "http://h/wfs?key=1"})})
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "parcels_de" || f.MaxParallelTasks != 2 || len(f.Tasks) != 2 {
		t.Fatalf("flow = %+v", f)
	}
	a, b := f.Task("a"), f.Task("b")
	if got := a.Config.(*testConfig).URL; got != "http://h/wfs?key=1" {
		t.Errorf("url = %q", got)
	}
	wantA := retry.Policy{MaxAttempts: 3, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, Jitter: "full"}
	if a.Retry != wantA {
		t.Errorf("a.Retry = %+v, want %+v (task overrides only what it sets)", a.Retry, wantA)
	}
	if b.RateLimit != (retry.RateLimit{RequestsPerSecond: 5, Burst: 5, Concurrency: 8}) {
		t.Errorf("b.RateLimit = %+v", b.RateLimit)
	}
	if len(b.DependsOn) != 1 || b.DependsOn[0] != "a" {
		t.Errorf("b.DependsOn = %v", b.DependsOn)
	}
	if a.Redirects != retry.RedirectsSameOrigin || b.Redirects != retry.RedirectsStripCredentials {
		t.Errorf("redirects: a %q, b %q; want a's own, b the default's", a.Redirects, b.Redirects)
	}
	// Unset everywhere, a task keeps its credentials with their origin.
	g, err := Parse("y.yaml", []byte("name: g\ntasks:\n  a: {type: fake}\n"), Options{Registry: testRegistry()})
	if err != nil || g.Task("a").Redirects != retry.RedirectsSameOrigin {
		t.Errorf("default redirects: %v %v", g, err)
	}
	if _, err := Parse("z.yaml", []byte("name: g\ntasks:\n  a: {type: fake, redirects: always}\n"), Options{Registry: testRegistry()}); err == nil ||
		!strings.Contains(err.Error(), "redirects") || !strings.Contains(err.Error(), "strip_credentials") {
		t.Errorf("redirects: always: %v; want an error naming the choices", err)
	}
}

// TestByteOrderMark: a flow saved with a UTF-8 byte order mark (Windows editors) reads
// as without; it was refused as `unknown key "\ufeffname"`.
func TestByteOrderMark(t *testing.T) {
	f, err := Parse("bom.yaml", []byte("\xef\xbb\xbfname: bom\ntasks:\n  a: {type: fake}\n"), Options{Registry: testRegistry()})
	if err != nil || f.Name != "bom" {
		t.Fatalf("flow with a BOM: %v %v", f, err)
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{name: "plain", in: "abc", want: "abc"},
		{name: "set", in: "x${A}y", want: "x1y"},
		{name: "default used", in: "${NOPE:-d}", want: "d"},
		{name: "default unused", in: "${A:-d}", want: "1"},
		{name: "empty takes default", in: "${EMPTY:-d}", want: "d"},
		{name: "empty without default", in: "${EMPTY}", want: ""},
		{name: "escaped", in: "$${A}", want: "${A}"},
		{name: "missing", in: "${NOPE}", err: "environment variable NOPE is not set"},
		{name: "unclosed", in: "${A", err: "unclosed"},
		{name: "bad name", in: "${A-B}", err: "not a valid environment variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expand(tt.in, env(map[string]string{"A": "1", "EMPTY": ""}))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("expand(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "missing letter", in: "typname", want: "typename"},
		{name: "swapped", in: "dpeends_on", want: "depends_on"},
		{name: "far", in: "colour", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := suggest(tt.in, []string{"typename", "depends_on", "url", "bbox"}); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestDownstream(t *testing.T) {
	f := &Flow{Tasks: []*Task{{ID: "a"}, {ID: "b", DependsOn: []string{"a"}}, {ID: "c", DependsOn: []string{"b"}}, {ID: "d"}}}
	got := strings.Join(Downstream(f, []string{"a"}), ",")
	if got != "a,b,c" {
		t.Errorf("Downstream(a) = %s, want a,b,c", got)
	}
}

// TestFlowLimits: input that made the YAML library's time and memory explode is refused
// before it is decoded, naming where; real flows, block scalars full of brackets
// included, pass.
func TestFlowLimits(t *testing.T) {
	deep := "name: x\ntasks: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n"
	tests := []struct {
		name, src, want string
	}{
		{name: "40,000 brackets deep", src: deep, want: "x.yaml:2:72: brackets nested more than 64 deep"},
		{name: "a 2 MB string", src: "name: x\ndescription: \"" + strings.Repeat("a", 2<<20) + "\"\ntasks: {}\n", want: "a flow may have at most 1048576 (1 MiB)"},
		{name: "indented 300 columns", src: "name: x\ntasks:\n" + strings.Repeat(" ", 300) + "a: {type: fake}\n", want: "x.yaml:3:301: line indented by 300 columns"},
		{name: "a block scalar of brackets is text", src: "name: x\ndescription: |\n  " + strings.Repeat("[", 200) + "\n  {{{{\ntasks:\n  a: {type: fake}\n"},
		{name: "a quote inside a plain scalar opens nothing", src: "name: x\ntasks: [x '" + strings.Repeat("[", 80000) + strings.Repeat("]", 80000) + "\n",
			want: "brackets nested more than 64 deep"},
		{name: "CRLF, a block header with a comment", src: "name: x\r\ndescription: | # notes\r\n  " + strings.Repeat("[", 200) + "\r\ntasks:\r\n  a: {type: fake}\r\n"},
		{name: "brackets in quotes are text", src: "name: x\ndescription: \"" + strings.Repeat("[", 200) + "\"\ntasks:\n  a: {type: fake}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse("x.yaml", []byte(tt.src), Options{Registry: testRegistry()})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v; want %q", err, tt.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Logf("took %s", d) // not asserted: timing belongs to benchmarks
			}
		})
	}
}

// FuzzParse: no flow file, however malformed, panics the decoder or gets past the
// limits; the example flows and the invalid cases are the seeds.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../flows/*.yaml")
	more, _ := filepath.Glob("testdata/invalid/*.yaml")
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\ntasks: [[[[{a: [b]}]]]]\n"))
	f.Add([]byte("name: &a x\ntasks: {t: {type: fake, url: *a}}\n"))
	reg := testRegistry()
	f.Fuzz(func(t *testing.T, src []byte) {
		fl, err := Parse("f.yaml", src, Options{Registry: reg, LookupEnv: func(string) (string, bool) { return "", false }})
		if err == nil && (fl == nil || len(fl.Tasks) == 0) {
			t.Fatalf("a flow without tasks validated: %q", src)
		}
		if err == nil && len(src) > maxFlowBytes {
			t.Fatalf("a flow of %d bytes validated", len(src))
		}
	})
}

// TestStoreWaitKey: store_wait takes a duration above zero; unset, the flow leaves it to
// the run (DefaultStoreWait unless --store-wait says otherwise).
func TestStoreWaitKey(t *testing.T) {
	tests := []struct {
		name, line string
		want       time.Duration
		err        string
	}{
		{name: "unset", want: 0},
		{name: "minutes", line: "store_wait: 30m\n", want: 30 * time.Minute},
		{name: "seconds", line: "store_wait: 45s\n", want: 45 * time.Second},
		{name: "zero", line: "store_wait: 0s\n", err: "store_wait: 0s must be above zero (default 10m0s)"},
		{name: "negative", line: "store_wait: -1m\n", err: "store_wait: duration -1m must not be negative"},
		{name: "not a duration", line: "store_wait: soon\n", err: "store_wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("w.yaml", []byte("name: w\n"+tt.line+"tasks:\n  a: {type: fake}\n"), Options{Registry: testRegistry()})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || f.StoreWait != tt.want {
				t.Fatalf("StoreWait = %v (err %v), want %v", f, err, tt.want)
			}
		})
	}
}

// TestMemoryLimitKey: memory_limit takes a size, defaults to none (the runner's
// default), and refuses what is not a size or too small to run with, at its line.
func TestMemoryLimitKey(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  int64
		err   string
	}{
		{"unset", "", 0, ""},
		{"gib", "memory_limit: 2GiB\n", 2 << 30, ""},
		{"bytes", "memory_limit: 134217728\n", 128 << 20, ""},
		{"not a size", "memory_limit: lots\n", 0, `"lots" is not a size`},
		{"too small", "memory_limit: 1MiB\n", 0, "below the smallest budget, 64 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: g\n" + tc.value + "tasks:\n  a: {type: fake}\n"
			f, err := Parse("m.yaml", []byte(src), Options{Registry: testRegistry()})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "memory_limit") {
					t.Fatalf("err = %v; want one naming memory_limit and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.MemoryLimit != tc.want {
				t.Errorf("MemoryLimit = %d, want %d", f.MemoryLimit, tc.want)
			}
		})
	}
}
