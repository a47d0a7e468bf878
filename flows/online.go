package flows

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// position is where a key of a flow's file is.
type position struct{ line, col int }

// positions keeps where each key of the flow is, by path ("tasks.ortho.wms.layers"),
// for problems found once the flow is valid (TaskProblems).
func positions(keys map[string]ast.Node) map[string]position {
	out := make(map[string]position, len(keys))
	for path, n := range keys {
		if n == nil {
			continue
		}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			out[path] = position{tk.Position.Line, tk.Position.Column}
		}
	}
	return out
}

// TaskProblems collects problems found in a task of a valid flow after it was parsed
// (geoflow validate --online asks each task's server), each reported at the line and
// column of the key it concerns, in the words the parser uses for its own. It implements
// tasks.Problems; it is not safe for concurrent use.
type TaskProblems struct {
	f    *Flow
	id   string
	list []Problem
}

// TaskProblems returns an empty collector for the task id of f.
func (f *Flow) TaskProblems(id string) *TaskProblems {
	return &TaskProblems{f: f, id: id}
}

// At implements tasks.Problems: key is a path below the task ("bbox", "wms.layers"), ""
// for the task itself; a key the file does not hold is reported at the task's id.
func (p *TaskProblems) At(key string, format string, args ...any) {
	base := "tasks." + p.id
	pos, ok := p.f.keys[base+"."+key]
	if key == "" || !ok {
		pos = p.f.keys[base]
	}
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = key + ": " + msg
	}
	p.list = append(p.list, Problem{File: p.f.File, Line: pos.line, Col: pos.col, Msg: fmt.Sprintf("task %q: %s", p.id, msg)})
}

// Problems returns what was reported, in the order reported.
func (p *TaskProblems) Problems() []Problem { return p.list }
