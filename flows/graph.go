package flows

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
