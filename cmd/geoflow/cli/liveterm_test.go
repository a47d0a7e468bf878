package cli

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows/engine"
)

// TestProgressLineFits: at any width from 40 to 200 columns and with any counts, a task's
// progress line stays within the width (one column spare), its percentage is of the units
// it shows, and its dead count stays while there is room for the units.
func TestProgressLineFits(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    engine.Snapshot
		want string // the line at 200 columns
	}{
		{name: "small", s: engine.Snapshot{ID: "parcels", Total: 37, Done: 36, Dead: 1, Inserted: 19495, Started: now.Add(-17 * time.Second)},
			want: "parcels  36/37 units 97%  19495 features  1147/s  1 dead"},
		{name: "planning", s: engine.Snapshot{ID: "parcels", Started: now},
			want: "parcels  0/0 units  0 features  0/s"},
		{name: "large counts", s: engine.Snapshot{ID: "a-task-with-a-rather-long-identifier", Total: 98765432, Done: 12345678, Dead: 1234567,
			Inserted: 9876543210, Skipped: 123456789, Started: now.Add(-3 * time.Hour)},
			want: "a-task-with-a-rathe…  12345678/98765432 units 12%  9876543210 features  925926/s  ETA 18h49m5s  1234567 dead"},
		{name: "percentage rounds down", s: engine.Snapshot{ID: "t", Total: 1000, Done: 999, Started: now.Add(-time.Minute)},
			want: "t  999/1000 units 99%  0 features  0/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idw := min(runeLen(tt.s.ID), 20)
			if got := progressLine(tt.s, now, idw, 199); got != tt.want {
				t.Errorf("at 200 columns:\n got %q\nwant %q", got, tt.want)
			}
			units := fmt.Sprintf("%d/%d", tt.s.Done, tt.s.Total)
			for width := 40; width <= 200; width++ {
				got := progressLines([]engine.Snapshot{tt.s}, now, width)[0]
				if runeLen(got) > width-1 {
					t.Errorf("at %d columns, %d: %q", width, runeLen(got), got)
				}
				if !strings.Contains(got, units) {
					t.Errorf("at %d columns, no units %s: %q", width, units, got)
				}
				if tt.s.Dead > 0 && !strings.Contains(got, fmt.Sprintf("%d dead", tt.s.Dead)) {
					t.Errorf("at %d columns, no dead count: %q", width, got)
				}
			}
		})
	}
}

// TestLiveTermLogsAbove: a log line written while progress lines are on screen clears
// them first and draws them again below itself, so neither overwrites the other.
func TestLiveTermLogsAbove(t *testing.T) {
	var b bytes.Buffer
	lt := &liveTerm{w: &b}
	lt.draw([]string{"a  1/2 units 50%", "b  0/1 units 0%"})
	lt.Write([]byte("12:00:00 host: 3 retries in 5s (3×503), max wait 1s\n"))
	lt.draw([]string{"a  2/2 units 100%", "b  1/1 units 100%"})
	lt.keep()
	lt.Write([]byte("after\n"))
	want := "a  1/2 units 50%\nb  0/1 units 0%\n" +
		"\x1b[2A\r\x1b[J12:00:00 host: 3 retries in 5s (3×503), max wait 1s\na  1/2 units 50%\nb  0/1 units 0%\n" +
		"\x1b[2A\r\x1b[Ja  2/2 units 100%\nb  1/1 units 100%\n" +
		"after\n"
	if b.String() != want {
		t.Errorf("terminal got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestConsoleLog: on a terminal a log line is short: the time, the message, URLs cut
// to their path, wrapped within the width; a summary's figures are left to JSON.
func TestConsoleLog(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newConsoleHandler(&b, slog.LevelInfo, func() int { return 80 }))
	long := "http://127.0.0.1:28391/wfs?token=s3cr3t&SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf%3Aparcels&BBOX=48.06%2C11.51%2C48.08%2C11.53"
	log.Debug("retrying", "url", long)
	log.Info("127.0.0.1:28391: 3 retries in 5s (3×503), max wait 1s", slog.Group("summary", "host", "http://127.0.0.1:28391", "retries", 3))
	log.Error("unit failed", "task", "parcels", "err", fmt.Errorf("retry: GET %s: http_5xx 500 after 6 attempts", long))
	got := b.String()
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if runeLen(l) > 79 {
			t.Errorf("a line of %d: %q", runeLen(l), l)
		}
	}
	for _, bad := range []string{"retrying", "s3cr3t", "summary", "BBOX"} {
		if strings.Contains(got, bad) {
			t.Errorf("log shows %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{" 127.0.0.1:28391: 3 retries in 5s (3×503), max wait 1s\n", " ERROR unit failed task=parcels",
		"http://127.0.0.1:28391/wfs?…(", "chars): http_5xx 500"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}

func TestShortURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "short kept", in: "http://h:8080/wfs?a=1", want: "http://h:8080/wfs?a=1"},
		{name: "secret redacted", in: "http://h/wfs?token=s3cr3t", want: "http://h/wfs?token=REDACTED"},
		{name: "long query cut", in: "http://h/wfs?SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf%3Aparcels&COUNT=1000&BBOX=1,2,3,4",
			want: "http://h/wfs?…(90 chars)"},
		{name: "no query", in: "http://h/" + strings.Repeat("a", 80), want: "http://h/" + strings.Repeat("a", 80)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shortURL(tt.in); got != tt.want {
				t.Errorf("shortURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
