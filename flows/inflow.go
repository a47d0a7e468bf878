package flows

import (
	"fmt"
	"path/filepath"

	"github.com/geoflow/geoflow/tasks"
)

// placeTasks tells each task config that asks (tasks.InFlow) where it stands in the flow:
// the flow file's directory, the tables the other tasks write, and which of them run
// before and after it. It runs once the graph is checked.
func (d *decoder) placeTasks(f *Flow) {
	byID := map[string]*Task{}
	tables := map[string]string{}
	for _, t := range f.Tasks {
		byID[t.ID] = t
		if ft, ok := t.Config.(interface{ FeatureTarget() *tasks.FeatureTarget }); ok && ft.FeatureTarget().Table != "" {
			tables[t.ID] = ft.FeatureTarget().Table
		}
	}
	for _, t := range f.Tasks {
		in, ok := t.Config.(tasks.InFlow)
		if !ok {
			continue
		}
		info := tasks.FlowInfo{Dir: filepath.Dir(d.file), Tables: map[string]string{},
			Upstream: map[string]bool{}, Downstream: map[string]bool{}}
		for _, o := range f.Tasks {
			if o.ID == t.ID {
				continue
			}
			if table, ok := tables[o.ID]; ok {
				info.Tables[o.ID] = table
			}
			info.Upstream[o.ID] = dependsOn(byID, t.ID, o.ID)
			info.Downstream[o.ID] = dependsOn(byID, o.ID, t.ID)
		}
		path := "tasks." + t.ID
		in.InFlow(info, &taskProblems{d: d, path: path, what: fmt.Sprintf("task %q", t.ID), fallback: d.keys[path]})
	}
}
