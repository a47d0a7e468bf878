package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// longError is a dead letter's error as the handler words it, 450 characters long.
const longError = "retry: GET http://127.0.0.1:18090/wfs?token=REDACTED&SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature" +
	"&TYPENAMES=gf%3Aparcels&SRSNAME=EPSG%3A4326&OUTPUTFORMAT=application%2Fjson&COUNT=1000" +
	"&BBOX=48.06666666666666%2C11.516666666666667%2C48.08333333333333%2C11.533333333333333%2Curn%3Aogc%3Adef%3Acrs%3AEPSG%3A%3A4326" +
	": http_5xx 500 after 6 attempts: no attempts left (max_attempts): 500 Internal Server Error: <?xml version=\"1.0\"?>" +
	": HTTP 500 Internal Server Error"

// TestTablesFit: every table and detail view of the CLI fits 80 columns, and at width 0
// (--wide) shows every value whole, as it did before it fitted.
func TestTablesFit(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 15, 8, 0, time.UTC)
	area := [4]float64{11.46, 48.06, 11.48, 48.08}
	run := store.RunRecord{ID: 123456, Flow: "a-flow-with-a-rather-long-name-for-a-table", Status: store.Failed, Trigger: "schedule",
		ScheduledFor: &at, StartedAt: at, FinishedAt: &at, UnitsTotal: 1234567, UnitsDone: 1234000, UnitsDead: 567,
		FeaturesInserted: 98765432, FeaturesSkipped: 1234567, Area: &area, Error: longError,
		Tasks: []store.TaskRecord{{Task: "parcels-of-the-whole-country", Type: "wfs", State: store.Failed, StartedAt: &at, FinishedAt: &at,
			UnitsTotal: 1234567, UnitsDone: 1234000, UnitsDead: 567, FeaturesInserted: 98765432, Error: longError,
			MirrorNote: "deletions withheld: 567 units of the task are not done (dead letters, or not run); they apply once the units are replayed"}},
		RunHosts: store.RunHosts{Hosts: []store.HostCount{{Host: "https://geodienste.example-long-domain-name.de:8443", Requests: 1234567,
			Retries: 12345, RateLimited: 1234, WaitedMS: 123456789, BreakerOpened: 12}}}}
	entry := dlq.Entry{ID: 98765, RunID: 123456, Flow: run.Flow, Task: run.Tasks[0].Task, Unit: "q.4.1.2.3.0.1", Class: dlq.ClassHTTP5xx,
		HTTPStatus: 500, Attempts: 6, Status: dlq.StatusOpen, FirstFailedAt: at, LastFailedAt: at, Error: longError,
		Snippet: strings.Repeat("<ows:ExceptionText>the database system is in recovery mode</ows:ExceptionText>", 5)}
	entry.Request.Method, entry.Request.URL = "GET", "http://127.0.0.1:18090/wfs?"+strings.Repeat("BBOX=48.0666%2C11.5166&", 20)
	views := []struct {
		name  string
		print func(w *bytes.Buffer, width int) error
		whole []string // what width 0 shows on one line
	}{
		{name: "runs list", print: func(w *bytes.Buffer, width int) error {
			return printRuns(w, []store.RunRecord{run, {ID: 1, Flow: "p"}}, width)
		},
			whole: []string{run.Flow, "SCHEDULED FOR", "PRESENT", "TWICE", "11.46,48.06,11.48,48.08"}},
		{name: "runs show", print: func(w *bytes.Buffer, width int) error { return printRun(w, run, width) },
			whole: []string{longError, run.Tasks[0].MirrorNote, "BREAKER OPENED", "CLOSED"}},
		{name: "dlq list", print: func(w *bytes.Buffer, width int) error { return printEntries(w, []dlq.Entry{entry}, width) },
			whole: []string{dlq.Reason(longError), "LAST FAILED", run.Flow}},
		{name: "changes", print: func(w *bytes.Buffer, width int) error {
			return writeChangesTable(w, 1, width, func(fn func(store.Change) error) error {
				return fn(store.Change{Task: run.Tasks[0].Task, Table: "a_schema.a_rather_long_table_name", Kind: "updated",
					Key: strings.Repeat("k", 70), FeatureID: "parcels." + strings.Repeat("9", 60)})
			})
		}, whole: []string{strings.Repeat("k", 70), "parcels." + strings.Repeat("9", 60)}},
		{name: "dlq show", print: func(w *bytes.Buffer, width int) error { printEntry(w, entry, width); return nil },
			whole: []string{longError, entry.Request.URL, entry.Snippet}},
	}
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			for _, width := range []int{80, 60, 120} {
				var b bytes.Buffer
				if err := v.print(&b, width); err != nil {
					t.Fatal(err)
				}
				for _, l := range strings.Split(b.String(), "\n") {
					if runeLen(l) > width {
						t.Errorf("at %d columns, a line of %d:\n%s", width, runeLen(l), l)
					}
				}
			}
			var b bytes.Buffer
			if err := v.print(&b, 0); err != nil {
				t.Fatal(err)
			}
			for _, w := range v.whole {
				if !strings.Contains(b.String(), w) {
					t.Errorf("--wide lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestDLQListReasonFirst: at 80 columns the ERROR column starts with the server's answer,
// not the request the handler's error starts with.
func TestDLQListReasonFirst(t *testing.T) {
	var b bytes.Buffer
	if err := printEntries(&b, []dlq.Entry{{ID: 1, RunID: 1, Flow: "p", Task: "parcels", Unit: "q.4.1", Class: dlq.ClassHTTP5xx, Error: longError}}, 80); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  HTTP 500 Internal Server Error") || strings.Contains(b.String(), "retry: GET") {
		t.Errorf("dlq list at 80 columns:\n%s", b.String())
	}
}

func TestFitColumns(t *testing.T) {
	cols := []column{{head: "ID"}, {head: "NAME", free: true, min: 8}, {head: "WHEN", drop: 1}, {head: "EXTRA", drop: 2}, {head: "ERROR", free: true, min: 20}}
	natural := []int{4, 30, 19, 10, 200}
	tests := []struct {
		name  string
		width int
		want  []int
	}{
		{name: "wide", width: 0, want: []int{4, 30, 19, 10, 200}},
		{name: "room for all, error cut", width: 120, want: []int{4, 30, 19, 10, 49}},
		{name: "80: free text cut to its floors first", width: 80, want: []int{4, 13, 19, 10, 26}},
		{name: "60: then EXTRA left out", width: 60, want: []int{4, 9, 19, 0, 22}},
		{name: "40: then WHEN, floors kept", width: 40, want: []int{4, 10, 0, 0, 22}},
		{name: "20: then below the floors", width: 20, want: []int{4, 6, 0, 0, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fitColumns(cols, natural, tt.width)
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("fitColumns(%d) = %v, want %v", tt.width, got, tt.want)
				}
			}
		})
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		width int
		want  []string
	}{
		{name: "fits", s: "a b c", width: 10, want: []string{"a b c"}},
		{name: "words", s: "the quick brown fox jumps", width: 10, want: []string{"the quick", "brown fox", "jumps"}},
		{name: "a URL goes on after GET", s: "GET http://h/abcdefghij", width: 10, want: []string{"GET http:/", "/h/abcdefg", "hij"}},
		{name: "newlines kept", s: "one\ntwo three", width: 5, want: []string{"one", "two", "three"}},
		{name: "no limit", s: "a long line", width: 0, want: []string{"a long line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wrap(tt.s, tt.width); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("wrap(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
			}
		})
	}
}
