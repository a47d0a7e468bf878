package dlq

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Summary is the line a run with dead letters ends with:
//
//	983 of 1000 units done; 17 dead letters (12 http_5xx, 5 parse): geoflow dlq list --run 42
//
// Classes are listed by count, largest first, then by name. With no dead letters it is
// just "1000 of 1000 units done". A nil byClass is empty; dead is the number of dead units,
// which may exceed the sum of byClass when some could not be recorded.
func Summary(done, total, dead, runID int64, byClass map[Class]int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d units done", done, total)
	if dead == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "; %d dead letter%s", dead, plural(dead))
	counts := Counts(byClass)
	if len(counts) > 0 {
		parts := make([]string, len(counts))
		for i, c := range counts {
			parts[i] = fmt.Sprintf("%d %s", c.N, c.Key)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ": geoflow dlq list --run %d", runID)
	return b.String()
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Count is a number of entries sharing one value of a grouping key.
type Count struct {
	Key string `json:"key"`
	N   int64  `json:"count"`
}

// Counts turns a map of counts into a list, largest first, ties by key; zero counts are
// dropped.
func Counts[K ~string](m map[K]int64) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		if n != 0 {
			out = append(out, Count{Key: string(k), N: n})
		}
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// StatsRow is a number of entries sharing a class, task, host and status; the store
// returns these and Aggregate groups them.
type StatsRow struct {
	Class  Class
	Task   string
	Host   string // host[:port] of the request URL; "" when no request was made
	Status Status
	N      int64
}

// Stats counts entries grouped by class, task, host and status, each list largest first.
type Stats struct {
	Total    int64   `json:"total"`
	ByClass  []Count `json:"by_class"`
	ByTask   []Count `json:"by_task"`
	ByHost   []Count `json:"by_host"`
	ByStatus []Count `json:"by_status"`
}

// NoHost is the host key of entries that made no request (a database failure, say).
const NoHost = "(none)"

// Aggregate groups rows into Stats.
func Aggregate(rows []StatsRow) Stats {
	class, task, host, status := map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	var s Stats
	for _, r := range rows {
		s.Total += r.N
		class[string(r.Class)] += r.N
		task[r.Task] += r.N
		status[string(r.Status)] += r.N
		host[cmp.Or(r.Host, NoHost)] += r.N
	}
	s.ByClass, s.ByTask, s.ByHost, s.ByStatus = Counts(class), Counts(task), Counts(host), Counts(status)
	return s
}
