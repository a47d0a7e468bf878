package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule tells the fire times of a flow. Its zero value is not usable; get one from
// ParseSchedule. It is safe for concurrent use.
type Schedule struct {
	// Spec is the schedule as the flow wrote it.
	Spec string
	// Location is the time zone the schedule is read in; fire times are given in it.
	Location *time.Location
	next     cron.Schedule
}

// ParseSchedule reads a flow's schedule: five cron fields or a descriptor (@hourly, @daily,
// @every 15m...), read in timezone (an IANA name). A spec may instead begin with its own
// CRON_TZ=zone (or TZ=zone); with neither, the schedule is in UTC, so that every instance
// of geoflow serve computes the same fire times wherever it runs.
//
// @every d fires at the multiples of d counted from midnight UTC (for a d that divides a
// day: @every 15m fires at :00, :15, :30 and :45), not d after the process started, for
// the same reason.
func ParseSchedule(spec, timezone string) (*Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("scheduler: empty schedule")
	}
	ownTZ := strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=")
	switch {
	case ownTZ && timezone != "":
		return nil, fmt.Errorf("schedule %q names its own time zone and timezone is %q: set it once", spec, timezone)
	case ownTZ && !strings.Contains(spec, " "):
		return nil, fmt.Errorf("schedule %q names a time zone but no schedule", spec)
	case !ownTZ:
		if timezone == "" {
			timezone = "UTC"
		}
		spec = "CRON_TZ=" + timezone + " " + spec
	}
	zone := spec[strings.Index(spec, "=")+1 : strings.Index(spec, " ")]
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("schedule time zone %q: %w", zone, err)
	}
	next, err := parseCron(spec)
	if err != nil {
		return nil, err
	}
	switch c := next.(type) {
	case cron.ConstantDelaySchedule:
		next = every(c.Delay)
	case *cron.ConstantDelaySchedule:
		next = every(c.Delay)
	}
	return &Schedule{Spec: strings.TrimSpace(spec[strings.Index(spec, " "):]), Location: loc, next: next}, nil
}

// parseCron is cron.ParseStandard, which has panicked on odd input before, made safe.
func parseCron(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("schedule %q cannot be read: %v", spec, r)
		}
	}()
	s, err = cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	return s, nil
}

// every fires at the multiples of its duration since the zero time, which for durations
// dividing a day are those since midnight UTC.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

// Next returns the first fire time after t, in the schedule's time zone, or the zero time
// when the schedule never fires again (the 30th of February).
func (s *Schedule) Next(t time.Time) time.Time {
	n := s.next.Next(t)
	if n.IsZero() {
		return n
	}
	return n.In(s.Location)
}

// NextN returns up to n fire times after t.
func (s *Schedule) NextN(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Between returns the fire times in (from, to], the latest limit of them when there are
// more, and how many were left out.
func (s *Schedule) Between(from, to time.Time, limit int) (times []time.Time, dropped int) {
	if e, ok := s.next.(every); ok {
		// Skip what would be dropped anyway: a long downtime of @every 1s is millions of fires.
		if skip := to.Sub(from)/time.Duration(e) - time.Duration(limit) - 1; skip > 0 {
			from = from.Add(skip * time.Duration(e))
			dropped = int(skip)
		}
	}
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		times = append(times, t)
		if len(times) > limit {
			times = times[1:]
			dropped++
		}
	}
	return times, dropped
}
