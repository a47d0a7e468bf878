// Package export is the export task (type: export): it writes a stored table, or the
// changes a run made to one, as a GeoPackage, FlatGeobuf or GeoJSON sequence file
// (package export writes them). A rerun whose input has not changed writes nothing.
package export

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/paulmach/orb"

	core "github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the task kind to register.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "export", NewConfig: func() tasks.Config { return &Config{} }}
}

// Config is the YAML configuration of an export task.
type Config struct {
	// Table is the stored [schema.]table to export.
	Table string `yaml:"table"`
	// Changes exports what this run's task Of changed (a mirror or history target)
	// instead of a table.
	Changes bool   `yaml:"changes"`
	Of      string `yaml:"of"`
	// Path is the file written; Format its format (default: from Path's extension).
	Path   string `yaml:"path"`
	Format string `yaml:"format"`
	// BBox keeps the features meeting this lon/lat box.
	BBox *[4]float64 `yaml:"bbox"`
	// SRS is the CRS written, EPSG:n; default the table's own.
	SRS string `yaml:"srs"`
	// Columns are the columns written, in this order; default all.
	Columns []string `yaml:"columns"`
	// Where keeps the rows this expression in the store's own SQL holds for.
	Where string `yaml:"where"`
	// Query exports the result of this SQL query (one SELECT in the store's own SQL)
	// instead of a table.
	Query string `yaml:"query"`

	dir string // the flow file's directory, which a relative Path is taken from
}

var (
	_ tasks.Referrer    = (*Config)(nil)
	_ tasks.TableReader = (*Config)(nil)
	_ tasks.InFlow      = (*Config)(nil)
)

// InFlow implements tasks.InFlow: a relative path is taken from the flow file's
// directory, as a SQL step's file is, whatever directory geoflow runs in.
// A query must come after the tasks that write the tables it names (queryRaces).
func (c *Config) InFlow(f tasks.FlowInfo, p tasks.Problems) {
	c.dir = f.Dir
	if c.Query != "" {
		for _, r := range queryRaces(c.Query, f) {
			p.At("depends_on", "%s", r)
		}
	}
}

// Check implements tasks.Config.
func (c *Config) Check(p tasks.Problems) {
	switch {
	case c.Changes && c.Of == "":
		p.At("of", "changes: true needs of: the task whose changes to export")
	case !c.Changes && c.Of != "":
		p.At("of", "of names the task whose changes to export: add changes: true")
	case c.Changes && c.Where != "":
		p.At("where", "where selects rows of a table, not changes")
	case c.Query != "":
		c.checkQuery(p)
	case !c.Changes && c.Table == "":
		p.At("", "table (or changes: true with of, or query) is required")
	}
	if c.Table != "" {
		if _, _, err := store.SplitTable(c.Table); err != nil {
			p.At("table", "%v", err)
		}
	}
	if c.Path == "" {
		p.At("", "path is required")
	} else if _, err := c.format(); err != nil {
		p.At(cmpKey(c.Format != "", "format", "path"), "%v", err)
	}
	if c.BBox != nil {
		if err := spatial.ValidateBBox(*c.BBox, true); err != nil {
			p.At("bbox", "%v", err)
		}
	}
	if c.SRS != "" {
		if _, err := core.ParseSRS(c.SRS); err != nil {
			p.At("srs", "%v", err)
		}
	}
	if c.Where != "" {
		if err := store.CheckWhere(c.Where); err != nil {
			p.At("where", "%v", err)
		}
	}
	for i, col := range c.Columns {
		if strings.TrimSpace(col) == "" {
			p.At(fmt.Sprintf("columns[%d]", i), "empty column name")
		}
	}
}

// checkQuery reports what a query export says wrong: another source besides it, a key
// that selects rows of a table, a query that is not one query.
func (c *Config) checkQuery(p tasks.Problems) {
	switch {
	case c.Table != "" || c.Changes:
		p.At("query", "give one of table, changes and query")
	case c.Where != "":
		p.At("where", "where selects rows of a table: put the condition in the query")
	case c.BBox != nil:
		p.At("bbox", "a bbox is not applied around a query: put the condition in the query")
	}
	if err := store.CheckQuery(c.Query); err != nil {
		p.At("query", "%v", err)
	}
}

func cmpKey(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// format is the format the file is written in.
func (c *Config) format() (core.Format, error) {
	f, err := core.ParseFormat(c.Format)
	if err != nil {
		return "", err
	}
	return core.FormatOf(c.Path, f)
}

// References implements tasks.Referrer: of names the task whose changes are exported.
func (c *Config) References() map[string]string {
	if c.Of == "" {
		return nil
	}
	return map[string]string{"of": c.Of}
}

// ReadsTable implements tasks.TableReader.
func (c *Config) ReadsTable() (string, string) { return c.Table, "table" }

// New implements tasks.Config.
func (c *Config) New(id string) (tasks.Task, error) {
	f, err := c.format()
	if err != nil {
		return nil, err
	}
	path := c.Path
	if !filepath.IsAbs(path) && c.dir != "" {
		path = filepath.Join(c.dir, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	spec := core.Spec{Table: c.Table, Path: abs, Format: f, Columns: c.Columns, Where: c.Where, Query: c.Query}
	if c.BBox != nil {
		spec.BBox = &orb.Bound{Min: orb.Point{c.BBox[0], c.BBox[1]}, Max: orb.Point{c.BBox[2], c.BBox[3]}}
	}
	if c.SRS != "" {
		if spec.SRID, err = core.ParseSRS(c.SRS); err != nil {
			return nil, err
		}
	}
	return &Task{id: id, spec: spec, of: c.Of, changes: c.Changes}, nil
}
