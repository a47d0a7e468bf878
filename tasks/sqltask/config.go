// Package sqltask is the `type: sql` task: a SQL script run in the store's database after
// the tasks it depends on, in one transaction with its unit's done state (a dissolve, a
// summary table, a materialized view refreshed once the harvest is in). Its one unit
// carries the script to the engine, which runs it in the unit's transaction through the
// store (store.UnitTx.ExecSQL); the task itself reads the script and checks it, when the
// flow is validated and again before a run starts, against the SQL the store runs.
package sqltask

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the `sql` task kind.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "sql", NewConfig: func() tasks.Config { return &Config{} }}
}

var (
	_ tasks.Config    = (*Config)(nil)
	_ tasks.InFlow    = (*Config)(nil)
	_ tasks.Preflight = (*Config)(nil)
)

// Config is a SQL step: its script given inline (sql:) or in a file (file:), never both.
type Config struct {
	// SQL is the script itself.
	SQL string `yaml:"sql"`
	// File is a file holding the script, relative to the flow's file. It is read when the
	// flow is validated and again each time the step runs, so that a replay runs the file
	// as fixed since.
	File string `yaml:"file"`

	dir    string            // the flow file's directory (InFlow)
	tables map[string]string // the upstream tasks' tables, bound as @<id>_table (InFlow)
}

// Check implements tasks.Config: the script is given one way.
func (c *Config) Check(p tasks.Problems) {
	switch {
	case c.SQL != "" && c.File != "":
		p.At("file", "give the script inline (sql:) or in a file (file:), not both")
	case c.SQL == "" && c.File == "":
		p.At("", "a sql task needs its script: sql: (inline) or file: (a file, relative to the flow)")
	}
}

// InFlow implements tasks.InFlow: the file is read relative to the flow, the script is
// checked (see problems), and the tables of the upstream tasks become its parameters.
func (c *Config) InFlow(f tasks.FlowInfo, p tasks.Problems) {
	c.dir = f.Dir
	c.tables = map[string]string{}
	for id, table := range f.Tables {
		if f.Upstream[id] {
			c.tables[id] = table
		}
	}
	if (c.SQL == "") == (c.File == "") {
		return // Check said why
	}
	key := "sql"
	if c.File != "" {
		key = "file"
	}
	text, source, err := c.script()
	if err != nil {
		p.At(key, "%v", err)
		return
	}
	for _, pr := range problems(text, store.SQLParamNames(slices.Sorted(maps.Keys(c.tables))), nil) {
		p.At(key, "%s", pr.at(source))
	}
	for _, r := range races(text, f) {
		p.At("depends_on", "%s", r)
	}
}

// New implements tasks.Config.
func (c *Config) New(id string) (tasks.Task, error) {
	return &Task{id: id, c: c}, nil
}

// script reads the script: the file as it is now, or the inline text. source names it in
// messages: the file as the flow names it, or "sql".
func (c *Config) script() (text, source string, err error) {
	if c.File == "" {
		return c.SQL, "sql", nil
	}
	path := c.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.dir, path)
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", c.File, fmt.Errorf("%s does not exist (the file is read relative to the flow's file, in %s)", c.File, cmpDir(c.dir))
	case err != nil:
		return "", c.File, fmt.Errorf("reading %s: %w", c.File, err)
	}
	return string(b), c.File, nil
}

func cmpDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
