package flows

import (
	"fmt"
	"slices"
	"strings"

	"github.com/geoflow/geoflow/tasks"
)

// Downstream returns ids plus every task that depends on them, directly or not.
func Downstream(f *Flow, ids []string) []string {
	in := map[string]bool{}
	for _, id := range ids {
		in[id] = true
	}
	for changed := true; changed; {
		changed = false
		for _, t := range f.Tasks {
			if in[t.ID] {
				continue
			}
			for _, d := range t.DependsOn {
				if in[d] {
					in[t.ID], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, t := range f.Tasks {
		if in[t.ID] {
			out = append(out, t.ID)
		}
	}
	return out
}

// cycles returns the dependency cycles among ts, each as the path that closes it, from
// the task it returns to and back ("a", "b", "a"), once per task a cycle returns to, in
// the order a depth-first search from the tasks in order finds them. Dependencies on
// tasks that do not exist, and on the task itself, are left out (they are reported
// apart).
func cycles(ts []*Task) [][]string {
	byID := make(map[string]*Task, len(ts))
	for _, t := range ts {
		byID[t.ID] = t
	}
	const (
		white = iota
		grey  // on the search's path: met again, it closes a cycle
		black
	)
	color := map[string]int{}
	var stack []string
	reported := map[string]bool{}
	var out [][]string
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for _, dep := range byID[id].DependsOn {
			if _, ok := byID[dep]; !ok || dep == id {
				continue
			}
			switch color[dep] {
			case white:
				visit(dep)
			case grey:
				if !reported[dep] {
					reported[dep] = true
					start := slices.Index(stack, dep)
					out = append(out, append(slices.Clone(stack[start:]), dep))
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for _, t := range ts {
		if color[t.ID] == white {
			visit(t.ID)
		}
	}
	return out
}

// checkGraph reports unknown dependencies and cycles.
func (d *decoder) checkGraph(f *Flow) {
	ids := make([]string, len(f.Tasks))
	byID := map[string]*Task{}
	for i, t := range f.Tasks {
		ids[i] = t.ID
		byID[t.ID] = t
	}
	for _, t := range f.Tasks {
		for i, dep := range t.DependsOn {
			pos := d.keys[fmt.Sprintf("tasks.%s.depends_on", t.ID)]
			if dep == t.ID {
				d.errorf(pos, "task %q: depends_on[%d]: a task cannot depend on itself (cycle %s -> %s)", t.ID, i, t.ID, t.ID)
				continue
			}
			if _, ok := byID[dep]; !ok {
				msg := fmt.Sprintf("task %q: depends_on[%d]: no task %q in this flow", t.ID, i, dep)
				if s := suggest(dep, ids); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				d.errorf(pos, "%s", msg)
			}
		}
	}
	// Tasks named in a task's keys (bbox_from) must exist and run before it.
	for _, t := range f.Tasks {
		ref, ok := t.Config.(tasks.Referrer)
		if !ok {
			continue
		}
		for key, id := range ref.References() {
			pos := d.keys[fmt.Sprintf("tasks.%s.%s", t.ID, key)]
			switch _, exists := byID[id]; {
			case !exists:
				msg := fmt.Sprintf("task %q: %s: no task %q in this flow", t.ID, key, id)
				if s := suggest(id, ids); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				d.errorf(pos, "%s", msg)
			case id == t.ID:
				d.errorf(pos, "task %q: %s: a task cannot take its own output", t.ID, key)
			case !dependsOn(byID, t.ID, id):
				d.errorf(pos, "task %q: %s names %q, which must run first: add it to depends_on", t.ID, key, id)
			}
		}
	}
	d.checkReads(f, byID)
	for _, c := range cycles(f.Tasks) {
		d.errorf(d.keys["tasks."+c[0]+".depends_on"], "dependency cycle: %s", strings.Join(c, " -> "))
	}
}

// dependsOn tells whether task from depends on task on, directly or through others.
func dependsOn(byID map[string]*Task, from, on string) bool {
	seen := map[string]bool{}
	var walk func(id string) bool
	walk = func(id string) bool {
		if seen[id] {
			return false
		}
		seen[id] = true
		t := byID[id]
		if t == nil {
			return false
		}
		for _, d := range t.DependsOn {
			if d == on || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(from)
}
