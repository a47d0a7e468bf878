package dlq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// Filter selects entries. Zero fields select everything: the zero Filter matches every
// entry of every status.
type Filter struct {
	IDs    []int64
	Flow   string
	Task   string
	RunID  int64
	Class  Class
	Status Status
	// Since keeps entries whose last failure is at or after it.
	Since time.Time
	// Before keeps entries whose last failure is before it (purge --older-than).
	Before time.Time
	// BBox keeps entries whose bbox intersects it (lon/lat); entries without a bbox never
	// match a non-nil BBox.
	BBox *orb.Bound
	// Host keeps entries whose request went to this host[:port] (as StatsRow.Host names
	// it, without credentials), compared case-insensitively; NoHost keeps those that made
	// no request.
	Host string
	// Limit caps the number of entries listed; 0 means no cap.
	Limit int
}

// FilterArgs are a filter as people type it on the command line.
type FilterArgs struct {
	Flow   string
	Task   string
	Run    int64
	Class  string
	Status string
	Since  string // "24h", "7d", "90m", or an RFC 3339 time
	BBox   string // "minx,miny,maxx,maxy", lon/lat
	Host   string // host[:port] of the request, or NoHost
}

// Parse validates a and returns the filter it describes; now anchors relative --since
// values. The error names the flag at fault and what would be accepted.
func (a FilterArgs) Parse(now time.Time) (Filter, error) {
	f := Filter{Flow: a.Flow, Task: a.Task, RunID: a.Run, Host: strings.ToLower(strings.TrimSpace(a.Host))}
	if a.Run < 0 {
		return Filter{}, fmt.Errorf("--run %d: want a run id (a positive number)", a.Run)
	}
	// A URL or user@host would match no entry: the stores compare the bare host[:port].
	if f.Host != NoHost && strings.ContainsAny(f.Host, "/?#@ \t") {
		return Filter{}, fmt.Errorf("--host %q: want a host[:port] as dlq stats names it (wfs.example.org:8443), or %s", a.Host, NoHost)
	}
	if a.Class != "" {
		c, err := ParseClass(a.Class)
		if err != nil {
			return Filter{}, err
		}
		f.Class = c
	}
	if a.Status != "" {
		s, err := ParseStatus(a.Status)
		if err != nil {
			return Filter{}, err
		}
		f.Status = s
	}
	if a.Since != "" {
		t, err := ParseSince(a.Since, now)
		if err != nil {
			return Filter{}, fmt.Errorf("--since %q: %w", a.Since, err)
		}
		f.Since = t
	}
	if a.BBox != "" {
		b, err := spatial.ParseBBox(a.BBox)
		if err != nil {
			return Filter{}, fmt.Errorf("--bbox %q: %w", a.BBox, err)
		}
		if err := spatial.ValidateBBox([4]float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}, true); err != nil {
			return Filter{}, fmt.Errorf("--bbox %q: %w", a.BBox, err)
		}
		f.BBox = &b
	}
	return f, nil
}

// ParseClass accepts one of Classes, case-insensitively.
func ParseClass(s string) (Class, error) {
	c := Class(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Classes(), c) {
		return c, nil
	}
	names := make([]string, 0, len(Classes()))
	for _, c := range Classes() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("--class %q: use one of %s", s, strings.Join(names, ", "))
}

// ParseStatus accepts open, replayed or discarded, case-insensitively.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Statuses(), st) {
		return st, nil
	}
	return "", fmt.Errorf("--status %q: use open, replayed or discarded", s)
}

// ParseSince reads a point in time: an age before now ("24h", "90m", "7d", "2w", or any
// time.ParseDuration value) or an RFC 3339 time ("2025-06-01T00:00:00Z"), or a date
// ("2025-06-01", midnight UTC).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := ParseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an age such as 24h or 7d, or an RFC 3339 time such as 2025-06-01T00:00:00Z")
	}
	return now.Add(-d), nil
}

// maxAge is the longest age ParseAge reads: 100 years, far within a Go duration.
const maxAge = 100 * 365 * 24 * time.Hour

// ParseAge reads a non-negative age: a time.ParseDuration value ("36h", "90m") or a whole
// number of days or weeks ("30d", "2w"), which Go durations lack.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(s, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(s, "w"):
		unit = 7 * 24 * time.Hour
	}
	if unit != 0 {
		n, err := strconv.ParseUint(s[:len(s)-1], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("dlq: age %q: want a whole number before %q", s, s[len(s)-1:])
		}
		// A Go duration ends at about 292 years: 107000d would wrap around to a
		// negative age, that is a time in the future.
		if n > uint64(maxAge/unit) {
			return 0, fmt.Errorf("dlq: age %q: at most %dd", s, maxAge/(24*time.Hour))
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("dlq: age %q: want a duration such as 30d, 12h or 90m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("dlq: age %q is negative", s)
	}
	return d, nil
}
