package flows

import (
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
