package flows

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// checkMirror refuses a table written by a mirror task and another task: each mirror
// deletes what its own harvest did not see, so it would delete the other's rows. writers
// maps each [schema.]table to the tasks writing it so far, mirrors marked with a "*".
func (d *decoder) checkMirror(cfg tasks.Config, id string, at ast.Node, writers map[string][]string) {
	ft, ok := cfg.(interface{ FeatureTarget() *tasks.FeatureTarget })
	if !ok {
		return
	}
	t := ft.FeatureTarget()
	schema, table, err := store.SplitTable(t.Table)
	if err != nil {
		return
	}
	name := schema + "." + table
	mine := id
	if t.Mode == store.ModeMirror {
		mine = "*" + id
	}
	for _, other := range writers[name] {
		if strings.HasPrefix(other, "*") || t.Mode == store.ModeMirror {
			d.errorf(at, "task %q: target.table %s is also written by task %q, and a mirror (mode: mirror) deletes what its own harvest does not see: give each task its own table",
				id, t.Table, strings.TrimPrefix(other, "*"))
			break
		}
	}
	writers[name] = append(writers[name], mine)
}

// checkReads reports a task reading a table (tasks.TableReader) that another task of
// the flow writes, without depending on it: the read could come before the write.
func (d *decoder) checkReads(f *Flow, byID map[string]*Task) {
	writers := map[string][]string{} // schema.table: the tasks whose target it is
	for _, t := range f.Tasks {
		if ft, ok := t.Config.(interface{ FeatureTarget() *tasks.FeatureTarget }); ok {
			if schema, table, err := store.SplitTable(ft.FeatureTarget().Table); err == nil {
				writers[schema+"."+table] = append(writers[schema+"."+table], t.ID)
			}
		}
	}
	for _, t := range f.Tasks {
		r, ok := t.Config.(tasks.TableReader)
		if !ok {
			continue
		}
		name, key := r.ReadsTable()
		schema, table, err := store.SplitTable(name)
		if name == "" || err != nil {
			continue
		}
		for _, w := range writers[schema+"."+table] {
			if w != t.ID && !dependsOn(byID, t.ID, w) {
				d.errorf(d.keys[fmt.Sprintf("tasks.%s.%s", t.ID, key)], "task %q: %s %s is written by task %q, which must run first: add it to depends_on", t.ID, key, name, w)
			}
		}
	}
}
