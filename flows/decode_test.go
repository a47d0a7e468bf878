package flows

import (
	"reflect"
	"testing"
	"time"
)

// TestSetScalar: each kind of scalar a flow key may hold, and the message a value that is
// not one gets.
func TestSetScalar(t *testing.T) {
	var (
		str  string
		b    bool
		i    int
		i32  int32
		f    float64
		dur  time.Duration
		enum = []string{"append", "upsert", "mirror"}
	)
	for _, tt := range []struct {
		name    string
		target  any // a pointer to the value set
		s       string
		enum    []string
		want    any
		wantMsg string
	}{
		{name: "string", target: &str, s: "gf:parcels", want: "gf:parcels"},
		{name: "enum member", target: &str, s: "upsert", enum: enum, want: "upsert"},
		{name: "enum typo", target: &str, s: "mirorr", enum: enum, wantMsg: `k: "mirorr" is not one of append, upsert, mirror (did you mean "mirror"?)`},
		{name: "enum far off", target: &str, s: "zzzzzzzz", enum: enum, wantMsg: `k: "zzzzzzzz" is not one of append, upsert, mirror`},
		{name: "bool", target: &b, s: "true", want: true},
		{name: "not a bool", target: &b, s: "yes please", wantMsg: `k: "yes please" is not a boolean (true or false)`},
		{name: "int", target: &i, s: "42", want: 42},
		{name: "fraction for an int", target: &i, s: "2.5", wantMsg: `k: "2.5" is not a whole number`},
		{name: "int32 overflow", target: &i32, s: "3000000000", wantMsg: "k: 3000000000 is too large"},
		{name: "float", target: &f, s: "0.25", want: 0.25},
		{name: "NaN", target: &f, s: "NaN", wantMsg: `k: "NaN" is not a number`},
		{name: "infinity", target: &f, s: "+Inf", wantMsg: `k: "+Inf" is not a number`},
		{name: "duration", target: &dur, s: "1m30s", want: 90 * time.Second},
		{name: "duration without unit", target: &dur, s: "500", wantMsg: `k: "500" is not a duration: give a unit, such as 500ms or 500s`},
		{name: "not a duration", target: &dur, s: "1x", wantMsg: `k: "1x" is not a duration (examples: 500ms, 30s, 5m)`},
		{name: "negative duration", target: &dur, s: "-5s", wantMsg: "k: duration -5s must not be negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := reflect.ValueOf(tt.target).Elem()
			v.SetZero()
			msg := setScalar(v, tt.s, "k", tt.enum)
			if msg != tt.wantMsg {
				t.Fatalf("message %q, want %q", msg, tt.wantMsg)
			}
			if tt.wantMsg == "" && !reflect.DeepEqual(v.Interface(), reflect.ValueOf(tt.want).Convert(v.Type()).Interface()) {
				t.Errorf("set %v, want %v", v.Interface(), tt.want)
			}
			if tt.wantMsg != "" && !v.IsZero() {
				t.Errorf("a refused value set %v", v.Interface())
			}
		})
	}
}

// TestCheckSchedule: a flow's schedule and time zone, alone and together.
func TestCheckSchedule(t *testing.T) {
	for _, tt := range []struct {
		name, schedule, timezone string
		want                     []keyProblem
	}{
		{name: "none"},
		{name: "cron", schedule: "0 2 * * *"},
		{name: "cron in a zone", schedule: "0 2 * * *", timezone: "Europe/Berlin"},
		{name: "zone in the schedule", schedule: "CRON_TZ=Europe/Berlin 0 2 * * *"},
		{name: "descriptor", schedule: "@daily"},
		{name: "not cron", schedule: "every night", want: []keyProblem{{"schedule", `schedule: "every night" is not a cron schedule: expected exactly 5 fields, found 2: [every night]`}}},
		{name: "not a zone", schedule: "0 2 * * *", timezone: "Mars/Olympus", want: []keyProblem{
			{"timezone", `timezone: "Mars/Olympus" is not a time zone: use an IANA name such as Europe/Berlin or UTC`}}},
		{name: "zone twice", schedule: "TZ=UTC 0 2 * * *", timezone: "UTC", want: []keyProblem{
			{"timezone", "timezone: the schedule names its own time zone; set it once, with timezone: or with CRON_TZ= in schedule:"}}},
		{name: "a zone and no schedule", schedule: "CRON_TZ=UTC", want: []keyProblem{{"schedule", `schedule: "CRON_TZ=UTC" names a time zone but no schedule`}}},
		{name: "zone alone, no schedule", timezone: "UTC"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSchedule(tt.schedule, tt.timezone)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("checkSchedule(%q, %q) = %q, want %q", tt.schedule, tt.timezone, got, tt.want)
			}
		})
	}
}
