package flows

import "slices"

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
