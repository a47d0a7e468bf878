package server

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/store"
)

// num writes n with thousands separators: 1,234,567.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return strconv.Itoa(int(d.Hours()/24)) + " days"
}

// millis is a span given in milliseconds, as span says it: "840 ms", "12.5 s".
func millis(ms int64) string { return span(time.Duration(ms) * time.Millisecond) }

// ago says how long before now t was: "3m12s ago".
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return span(time.Since(t)) + " ago"
}

// ahead says how long after now t is: "in 4h10m".
func ahead(t time.Time) string {
	if d := time.Until(t); d > 0 {
		return "in " + span(d)
	}
	return "now"
}

// elapsed is how long a run took, or has been going.
func elapsed(start time.Time, end *time.Time) string {
	if end == nil {
		return span(time.Since(start)) + " so far"
	}
	return span(end.Sub(start))
}

// clip cuts s to n characters (runes) with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// requestPrefix is how the rate-limit handler's errors start: "retry: GET URL: ".
var requestPrefix = regexp.MustCompile(`^retry: [A-Z]+ \S+: `)

// errSummary is a dead letter's error for a table cell: without the request (the
// details show it) and cut to 160 characters.
func errSummary(s string) string { return clip(requestPrefix.ReplaceAllString(s, ""), 160) }

// jsonString is v as JSON, for a data- attribute (html/template escapes it there).
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// chart is the overview's bar chart of the latest runs, oldest first.
type chart struct {
	Width, Height, Base int
	Bars                []bar
}

type bar struct {
	ID             int64
	Flow           string
	Status         store.State
	Features, Dead int64
	When           string
	X, Y, W, H     float64
}

// runChart lays out runs (latest first, as ListRuns returns them) as bars whose height
// is the features a run wrote, on a log scale, so that a run of ten and one of a million
// both show.
func runChart(runs []store.RunRecord) chart {
	c := chart{Width: 900, Height: 140, Base: 130}
	if len(runs) == 0 {
		return c
	}
	maxLog := 1.0
	for _, r := range runs {
		maxLog = math.Max(maxLog, math.Log10(float64(r.FeaturesInserted+r.FeaturesUpdated)+1))
	}
	step := float64(c.Width) / float64(max(len(runs), 30))
	for i := range runs {
		r := runs[len(runs)-1-i]
		f := r.FeaturesInserted + r.FeaturesUpdated
		h := 4 + (float64(c.Base)-14)*math.Log10(float64(f)+1)/maxLog
		c.Bars = append(c.Bars, bar{ID: r.ID, Flow: r.Flow, Status: r.Status, Features: f, Dead: r.UnitsDead,
			When: r.StartedAt.UTC().Format("2006-01-02 15:04 UTC"),
			X:    float64(i)*step + 1, W: math.Max(step-2, 1), Y: float64(c.Base) - h, H: h})
	}
	return c
}

// dag is a flow's tasks laid out in columns by depth: a task stands one column right of
// the deepest task it depends on.
type dag struct {
	Width, Height int
	Nodes         []dagNode
	Edges         []dagEdge
}

type dagNode struct {
	ID, Type    string
	X, Y, W, H  int
	TX, TY, TY2 int
}

type dagEdge struct{ D string }

func layoutDAG(f *flows.Flow) *dag {
	const w, h, gapX, gapY, pad = 170, 46, 60, 18, 10
	depth := map[string]int{}
	var depthOf func(id string, seen map[string]bool) int
	depthOf = func(id string, seen map[string]bool) int {
		if d, ok := depth[id]; ok {
			return d
		}
		if seen[id] { // a cycle never validates; guard all the same
			return 0
		}
		seen[id] = true
		d := 0
		if t := f.Task(id); t != nil {
			for _, dep := range t.DependsOn {
				d = max(d, depthOf(dep, seen)+1)
			}
		}
		depth[id] = d
		return d
	}
	rows := map[int]int{}
	pos := map[string]*dagNode{}
	g := &dag{}
	for _, t := range f.Tasks {
		d := depthOf(t.ID, map[string]bool{})
		n := dagNode{ID: t.ID, Type: t.Type, X: pad + d*(w+gapX), Y: pad + rows[d]*(h+gapY), W: w, H: h}
		n.TX, n.TY, n.TY2 = n.X+10, n.Y+20, n.Y+37
		rows[d]++
		g.Nodes = append(g.Nodes, n)
		g.Width = max(g.Width, n.X+w+pad)
		g.Height = max(g.Height, n.Y+h+pad)
	}
	for i := range g.Nodes {
		pos[g.Nodes[i].ID] = &g.Nodes[i]
	}
	for _, t := range f.Tasks {
		to := pos[t.ID]
		for _, dep := range t.DependsOn {
			from := pos[dep]
			if from == nil {
				continue
			}
			x1, y1, x2, y2 := from.X+from.W, from.Y+from.H/2, to.X, to.Y+to.H/2
			mx := (x1 + x2) / 2
			g.Edges = append(g.Edges, dagEdge{D: fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, mx, y1, mx, y2, x2, y2)})
		}
	}
	return g
}
