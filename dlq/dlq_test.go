package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

type dbErr struct{}

func (dbErr) Error() string { return "inserting features: connection reset" }

func (dbErr) FailureClass() Class { return ClassDatabase }

// sourceErr stands for the rate-limit handler's error (dlq cannot import retry).
type sourceErr struct{ d Details }

func (e *sourceErr) Error() string {
	return "retry: " + e.d.Method + " " + e.d.URL + ": service unavailable"
}
func (e *sourceErr) FailureDetails() Details { return e.d }

type classedErr struct {
	c   Class
	err error
}

func (e *classedErr) Error() string       { return e.err.Error() }
func (e *classedErr) FailureClass() Class { return e.c }

type bodyErr struct{ error }

func (bodyErr) RequestBody() string {
	return `<GetFeature><Query typeName="x"/><!-- token=SECRET --></GetFeature>`
}

func TestFromError(t *testing.T) {
	httpErr := &sourceErr{Details{Class: ClassHTTP5xx, Status: 503, Attempts: 4,
		Snippet: "<html>key=SECRET</html>", Method: "GET", URL: "https://u:SECRET@example.com/wfs?apikey=SECRET&typeName=a"}}
	tests := []struct {
		name       string
		err        error
		wantClass  Class
		wantStatus int
		wantTries  int
		wantURL    string
		wantBody   bool
	}{
		{name: "handler gave up", err: fmt.Errorf("fetching tile q/01: %w", httpErr), wantClass: ClassHTTP5xx,
			wantStatus: 503, wantTries: 4, wantURL: "https://u:REDACTED@example.com/wfs?apikey=REDACTED&typeName=a"},
		{name: "database", err: fmt.Errorf("writing: %w", dbErr{}), wantClass: ClassDatabase, wantTries: 1},
		{name: "retry error wins over database", err: fmt.Errorf("%w; %w", httpErr, dbErr{}), wantClass: ClassHTTP5xx,
			wantStatus: 503, wantTries: 4, wantURL: "https://u:REDACTED@example.com/wfs?apikey=REDACTED&typeName=a"},
		{name: "truncated", err: fmt.Errorf("reading page: %w", &classedErr{ClassTruncated, io.ErrUnexpectedEOF}), wantClass: ClassTruncated, wantTries: 1},
		{name: "exception report", err: fmt.Errorf("page 3: %w", &spatial.ExceptionReport{Code: "InvalidParameterValue", Text: "apikey=SECRET"}),
			wantClass: ClassExceptionReport, wantTries: 1},
		{name: "classified", err: &classedErr{ClassCircuitOpen, errors.New("open")}, wantClass: ClassCircuitOpen, wantTries: 1},
		{name: "plain", err: errors.New("something odd"), wantClass: ClassParse, wantTries: 1},
		{name: "timeout", err: &classedErr{ClassTimeout, context.DeadlineExceeded}, wantClass: ClassTimeout, wantTries: 1},
		{name: "nil", err: nil, wantClass: ClassParse, wantTries: 1},
		{name: "request body", err: bodyErr{errors.New("POST failed")}, wantClass: ClassParse, wantTries: 1, wantBody: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := FromError(tt.err)
			if e.Class != tt.wantClass || e.HTTPStatus != tt.wantStatus || e.Attempts != tt.wantTries || e.Request.URL != tt.wantURL {
				t.Errorf("class %s status %d attempts %d url %q; want %s %d %d %q",
					e.Class, e.HTTPStatus, e.Attempts, e.Request.URL, tt.wantClass, tt.wantStatus, tt.wantTries, tt.wantURL)
			}
			if e.Error == "" {
				t.Error("no message")
			}
			if (e.Request.Body != "") != tt.wantBody {
				t.Errorf("body %q", e.Request.Body)
			}
			js, _ := json.Marshal(e)
			if strings.Contains(string(js), "SECRET") {
				t.Errorf("entry leaks the secret: %s", js)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	e := Entry{
		Request: Request{Method: "GET", URL: "https://example.com/wfs?access_token=abc%2Fdef&x=1", Body: "password=hunter2"},
		Error:   "GET https://example.com/wfs?access_token=abc/def: Authorization: Bearer eyJabc.def",
		Snippet: "echo abc/def \x00\xff" + strings.Repeat("x", 5000),
		History: []ReplayItem{{Error: "token=zzz"}},
	}
	r := e.Redacted()
	all := r.Request.URL + r.Request.Body + r.Error + r.Snippet + r.History[0].Error
	for _, secret := range []string{"abc", "hunter2", "eyJabc", "zzz", "\x00", "\xff"} {
		if strings.Contains(all, secret) {
			t.Errorf("redacted entry holds %q: %q", secret, all[:min(len(all), 300)])
		}
	}
	if len(r.Snippet) > maxSnippet {
		t.Errorf("snippet is %d bytes, want at most %d", len(r.Snippet), maxSnippet)
	}
	if again := r.Redacted(); fmt.Sprint(again) != fmt.Sprint(r) {
		t.Errorf("redacting twice changed the entry:\n%+v\n%+v", r, again)
	}
	if e.History[0].Error != "token=zzz" {
		t.Error("Redacted modified the original's history")
	}
}

func TestFilterArgsParse(t *testing.T) {
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		args    FilterArgs
		want    Filter
		wantErr string
	}{
		{name: "empty", args: FilterArgs{}, want: Filter{}},
		{name: "plain", args: FilterArgs{Flow: "f", Task: "t", Run: 42, Class: "HTTP_5xx", Status: "open"},
			want: Filter{Flow: "f", Task: "t", RunID: 42, Class: ClassHTTP5xx, Status: StatusOpen}},
		{name: "since hours", args: FilterArgs{Since: "24h"}, want: Filter{Since: now.Add(-24 * time.Hour)}},
		{name: "since days", args: FilterArgs{Since: "7d"}, want: Filter{Since: now.Add(-7 * 24 * time.Hour)}},
		{name: "since time", args: FilterArgs{Since: "2025-06-01T08:00:00+02:00"}, want: Filter{Since: time.Date(2025, 6, 1, 6, 0, 0, 0, time.UTC)}},
		{name: "since date", args: FilterArgs{Since: "2025-06-01"}, want: Filter{Since: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}},
		{name: "bbox", args: FilterArgs{BBox: "5.9, 45.8, 10.5, 47.8"},
			want: Filter{BBox: &orb.Bound{Min: orb.Point{5.9, 45.8}, Max: orb.Point{10.5, 47.8}}}},
		{name: "bad class", args: FilterArgs{Class: "boom"}, wantErr: `--class "boom": use one of http_4xx, http_5xx`},
		{name: "bad status", args: FilterArgs{Status: "closed"}, wantErr: `--status "closed"`},
		{name: "bad since", args: FilterArgs{Since: "yesterday"}, wantErr: `--since "yesterday"`},
		{name: "negative since", args: FilterArgs{Since: "-3h"}, wantErr: `--since "-3h"`},
		{name: "bad bbox", args: FilterArgs{BBox: "1,2,3"}, wantErr: `--bbox "1,2,3"`},
		{name: "bbox not lon/lat", args: FilterArgs{BBox: "600000,5000000,700000,5100000"}, wantErr: `outside -180..180`},
		{name: "bad run", args: FilterArgs{Run: -1}, wantErr: `--run -1`},
		{name: "host", args: FilterArgs{Host: " WFS.Example.org:8443 "}, want: Filter{Host: "wfs.example.org:8443"}},
		{name: "no host", args: FilterArgs{Host: NoHost}, want: Filter{Host: NoHost}},
		{name: "host as a URL", args: FilterArgs{Host: "https://wfs.example.org/wfs"}, wantErr: `--host "https://wfs.example.org/wfs"`},
		{name: "host with credentials", args: FilterArgs{Host: "me@wfs.example.org"}, wantErr: `want a host[:port]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.args.Parse(now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Since.Equal(tt.want.Since) {
				t.Errorf("since %v, want %v", got.Since, tt.want.Since)
			}
			if (got.BBox == nil) != (tt.want.BBox == nil) || (got.BBox != nil && *got.BBox != *tt.want.BBox) {
				t.Errorf("bbox %v, want %v", got.BBox, tt.want.BBox)
			}
			got.Since, tt.want.Since, got.BBox, tt.want.BBox = time.Time{}, time.Time{}, nil, nil
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseAge(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"0d", 0, true},
		{"1.5d", 0, false},
		{"-1d", 0, false},
		{"-1h", 0, false},
		{"d", 0, false},
		{"", 0, false},
		{"thirty days", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAge(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseAge(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name              string
		done, total, dead int64
		byClass           map[Class]int64
		want              string
	}{
		{name: "issue example", done: 983, total: 1000, dead: 17, byClass: map[Class]int64{ClassParse: 5, ClassHTTP5xx: 12},
			want: "983 of 1000 units done; 17 dead letters (12 http_5xx, 5 parse): geoflow dlq list --run 42"},
		{name: "clean", done: 10, total: 10, want: "10 of 10 units done"},
		{name: "one", done: 9, total: 10, dead: 1, byClass: map[Class]int64{ClassTimeout: 1},
			want: "9 of 10 units done; 1 dead letter (1 timeout): geoflow dlq list --run 42"},
		{name: "ties by name", done: 0, total: 2, dead: 2, byClass: map[Class]int64{ClassTimeout: 1, ClassNetwork: 1},
			want: "0 of 2 units done; 2 dead letters (1 network, 1 timeout): geoflow dlq list --run 42"},
		{name: "unrecorded", done: 0, total: 1, dead: 1,
			want: "0 of 1 units done; 1 dead letter: geoflow dlq list --run 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.done, tt.total, tt.dead, 42, tt.byClass); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestEntryJSON(t *testing.T) {
	e := Entry{ID: 7, Flow: "f", Task: "t", RunID: 42, Unit: "q/0", BBox: &orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}},
		Class: ClassHTTP5xx, Error: "boom", HTTPStatus: 503, Attempts: 2, Status: StatusOpen}
	js, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "flow", "task", "run_id", "unit", "bbox", "error_class", "error", "http_status",
		"attempts", "status", "first_failed_at", "last_failed_at", "request", "response_snippet", "replay_history"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, js)
		}
	}
	if fmt.Sprint(m["bbox"]) != "[1 2 3 4]" || fmt.Sprint(m["replay_history"]) != "[]" {
		t.Errorf("bbox %v history %v", m["bbox"], m["replay_history"])
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"24h", "7d", "2w", "2025-06-01T00:00:00Z", "2025-06-01", "-1h", "99999999999d", ""} {
		f.Add(s)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSince(s, now)
		if err == nil && got.After(now) && !strings.Contains(s, "-") && !strings.Contains(s, "T") {
			t.Errorf("ParseSince(%q) = %v, after now", s, got)
		}
		if d, err := ParseAge(s); err == nil && d < 0 {
			t.Errorf("ParseAge(%q) = %v, negative", s, d)
		}
	})
}

// TestFromErrorMasksBeforeCutting: a flow's secret that straddled the cut of a long
// error was masked only after the cut, so its first part survived.
func TestFromErrorMasksBeforeCutting(t *testing.T) {
	const secret = "tk-7Qw9ZpX2se"
	for pad := maxError - 20; pad <= maxError; pad++ {
		e := FromError(errors.New(strings.Repeat("x", pad)+" "+secret+" end"), secret)
		if strings.Contains(e.Error, "tk-7Q") {
			t.Fatalf("pad %d: a part of the secret survived: ...%s", pad, e.Error[len(e.Error)-40:])
		}
	}
}
