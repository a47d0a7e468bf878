package tasks

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Config is the decoded YAML configuration of one task of a given kind. The flow decoder
// fills the struct's `yaml`-tagged fields, reporting unknown keys and wrong types itself;
// Check adds the rules that span fields.
type Config interface {
	// Check reports problems through p, naming the key they concern so that the
	// problem is reported at that key's line and column.
	Check(p Problems)
	// New builds the runnable task.
	New(id string) (Task, error)
}

// Referrer is implemented by configs that name other tasks of their flow (bbox_from: the
// extent of what another task stored). The flow validator checks that each named task
// exists and that this task depends on it, directly or not, so that it has run first.
type Referrer interface {
	// References maps each key that names a task to the task id it names; keys with no
	// value are left out.
	References() map[string]string
}

// TableReader is implemented by configs that read a stored table (an export): the flow
// validator checks that the task depends, directly or not, on every task of its flow
// whose target is that table, so that the table is written before it is read. A table
// no task of the flow writes is read as it is.
type TableReader interface {
	// ReadsTable is the [schema.]table read, and the key that names it; "" for none.
	ReadsTable() (table, key string)
}

// InFlow is implemented by configs that need to know where they stand in their flow:
// the directory of its file (a file the task names is read relative to it) and the tables
// the flow's other tasks write, and which of those tasks run before or after it. The
// flow validator calls InFlow once every task is decoded and the graph checked, and
// reports what it finds wrong through p.
type InFlow interface {
	InFlow(f FlowInfo, p Problems)
}

// FlowInfo is what a task's config knows of the flow it is in (InFlow).
type FlowInfo struct {
	// Dir is the directory of the flow's file.
	Dir string
	// Tables maps each other task of the flow that writes a feature table to its
	// [schema.]table.
	Tables map[string]string
	// Upstream are the tasks this one depends on, directly or not; Downstream those that
	// depend on it.
	Upstream, Downstream map[string]bool
}

// Basemap is implemented by configs whose task stores map tiles as files, which the
// web UI draws beneath its maps of the flow.
type Basemap interface {
	// BasemapTiles returns the directory of the stored tiles (z/x/y.ext, XYZ rows) and
	// their zoom range; ok is false when the task keeps no tile files.
	BasemapTiles() (dir string, minZoom, maxZoom int, ok bool)
}

// Source is implemented by configs whose units fetch from one server: SourceURL is a URL
// on that server (its host and port are what count). A pool's worker asks how long that
// host would keep a new request waiting before it takes one of the task's units.
type Source interface {
	SourceURL() string
}

// Problems collects configuration problems of one task. It is not safe for concurrent use.
type Problems interface {
	// At reports a problem at the given key path below the task ("bbox", "target.table");
	// "" means the task itself.
	At(key string, format string, args ...any)
}

// Kind is one type of task (`type: wfs`).
type Kind struct {
	// Name is the value of `type:` in a flow.
	Name string
	// NewConfig returns a pointer to a fresh config struct with its defaults set.
	NewConfig func() Config
	// Inspect, where set, describes the service at url as this kind harvests it
	// (geoflow inspect URL). It returns an error wrapping ErrNotThisKind when the URL does
	// not speak the kind's protocol, so that the next kind may be tried; any other error
	// is the service's answer (a 403, a broken capabilities document).
	Inspect func(ctx context.Context, env *Env, url string) (*Service, error)
	// Snippet, where set, is a task of this kind harvesting layer of s, as flow YAML
	// that runs unchanged (geoflow inspect --flow LAYER).
	Snippet func(s *Service, layer string) (string, error)
}

// ErrNotThisKind is what a Kind's Inspect wraps when the URL does not speak its protocol.
var ErrNotThisKind = errors.New("not a service of this kind")

// Registry maps task type names to kinds. The zero value is empty and ready to use; it is
// filled once at start-up (explicitly, never from init) and only read afterwards, so
// concurrent reads are safe.
type Registry struct {
	kinds map[string]Kind
}

// Register adds a kind. It panics on a duplicate name, a programming error.
func (r *Registry) Register(k Kind) {
	if r.kinds == nil {
		r.kinds = make(map[string]Kind)
	}
	if _, dup := r.kinds[k.Name]; dup {
		panic(fmt.Sprintf("tasks: kind %q registered twice", k.Name))
	}
	r.kinds[k.Name] = k
}

// Lookup returns the kind named name.
func (r *Registry) Lookup(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names returns the registered kind names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
