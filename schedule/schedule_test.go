package schedule_test

import (
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/schedule"
)

func TestParseSchedule(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2025, 3, 29, 12, 0, 7, 500, time.UTC) // the day before the spring DST change
	tests := []struct {
		name     string
		spec, tz string
		wantZone string
		want     []time.Time
		wantErr  string
	}{
		{name: "every aligns to the clock", spec: "@every 5s", wantZone: "UTC",
			want: []time.Time{time.Date(2025, 3, 29, 12, 0, 10, 0, time.UTC), time.Date(2025, 3, 29, 12, 0, 15, 0, time.UTC)}},
		{name: "every 15m", spec: "@every 15m", tz: "Europe/Berlin", wantZone: "Europe/Berlin",
			want: []time.Time{time.Date(2025, 3, 29, 12, 15, 0, 0, time.UTC), time.Date(2025, 3, 29, 12, 30, 0, 0, time.UTC)}},
		{name: "cron in UTC by default", spec: "0 2 * * *", wantZone: "UTC",
			want: []time.Time{time.Date(2025, 3, 30, 2, 0, 0, 0, time.UTC), time.Date(2025, 3, 31, 2, 0, 0, 0, time.UTC)}},
		{name: "cron in a time zone, across DST", spec: "0 2 * * *", tz: "Europe/Berlin", wantZone: "Europe/Berlin",
			// 02:00 does not exist in Berlin on 30 March 2025: robfig/cron skips that night
			// (documented in docs/commands.md, geoflow serve; schedule outside 02:00-03:00 local time to avoid it).
			want: []time.Time{time.Date(2025, 3, 31, 2, 0, 0, 0, berlin), time.Date(2025, 4, 1, 2, 0, 0, 0, berlin)}},
		{name: "CRON_TZ prefix", spec: "CRON_TZ=America/New_York 30 6 * * 1-5", wantZone: "America/New_York",
			want: []time.Time{time.Date(2025, 3, 31, 10, 30, 0, 0, time.UTC)}},
		{name: "hourly", spec: "@hourly", wantZone: "UTC", want: []time.Time{time.Date(2025, 3, 29, 13, 0, 0, 0, time.UTC)}},
		{name: "zone twice", spec: "CRON_TZ=UTC 0 2 * * *", tz: "Europe/Berlin", wantErr: "set it once"},
		{name: "zone only", spec: "CRON_TZ=UTC", wantErr: "no schedule"},
		{name: "bad zone", spec: "0 2 * * *", tz: "Mars/Olympus", wantErr: "Mars/Olympus"},
		{name: "six fields", spec: "0 0 2 * * *", wantErr: "expected exactly 5 fields"},
		{name: "empty", spec: " ", wantErr: "empty schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := schedule.ParseSchedule(tt.spec, tt.tz)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Location.String() != tt.wantZone {
				t.Errorf("zone %s, want %s", s.Location, tt.wantZone)
			}
			got := s.NextN(from, len(tt.want))
			for i, w := range tt.want {
				if i >= len(got) || !got[i].Equal(w) {
					t.Fatalf("next fires %v, want %v", got, tt.want)
				}
				if got[i].Location().String() != tt.wantZone {
					t.Errorf("fire %v not given in %s", got[i], tt.wantZone)
				}
			}
		})
	}
}

func TestNeverFires(t *testing.T) {
	s, err := schedule.ParseSchedule("0 0 30 2 *", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := s.NextN(time.Now(), 3); len(n) != 0 {
		t.Errorf("30 February fires at %v", n)
	}
}

func TestBetween(t *testing.T) {
	tests := []struct {
		name        string
		spec        string
		from, to    time.Time
		limit       int
		wantN       int
		wantDropped int
	}{
		{name: "every, few", spec: "@every 1s", from: time.Unix(100, 0), to: time.Unix(105, 0), limit: 10, wantN: 5},
		{name: "every, capped", spec: "@every 1s", from: time.Unix(100, 300), to: time.Unix(100+86400, 0), limit: 100, wantN: 100, wantDropped: 86300},
		{name: "cron, capped", spec: "*/5 * * * *", from: time.Unix(0, 0), to: time.Unix(7200, 0), limit: 3, wantN: 3, wantDropped: 21},
		{name: "to excluded before, included at", spec: "@hourly", from: time.Unix(3600, 0), to: time.Unix(7200, 0), limit: 3, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := schedule.ParseSchedule(tt.spec, "")
			if err != nil {
				t.Fatal(err)
			}
			got, dropped := s.Between(tt.from, tt.to, tt.limit)
			if len(got) != tt.wantN || dropped != tt.wantDropped {
				t.Fatalf("%d fires, %d dropped; want %d, %d", len(got), dropped, tt.wantN, tt.wantDropped)
			}
			if last := got[len(got)-1]; last.After(tt.to) || !s.Next(last).After(tt.to) {
				t.Errorf("last fire %v is not the last one up to %v", last, tt.to)
			}
			for i := 1; i < len(got); i++ {
				if !s.Next(got[i-1]).Equal(got[i]) {
					t.Fatalf("fires not consecutive: %v then %v", got[i-1], got[i])
				}
			}
		})
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"@every 5s", "0 2 * * *", "CRON_TZ=Europe/Berlin 0 2 * * 1-5", "TZ=UTC @daily",
		"CRON_TZ=UTC", "*/7 1,2,3 L * *", "@every -1s", "@every 1ns", "0 0 30 2 *", "TZ= x"} {
		f.Add(s, "")
		f.Add(s, "Europe/Berlin")
	}
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec, tz string) {
		s, err := schedule.ParseSchedule(spec, tz)
		if err != nil {
			return
		}
		prev := from
		for _, n := range s.NextN(from, 3) {
			if !n.After(prev) {
				t.Fatalf("%q in %q: fire %v is not after %v", spec, tz, n, prev)
			}
			prev = n
		}
	})
}
