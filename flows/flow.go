// Package flows is the flow language: it reads geoflow flows (YAML files describing a
// small DAG of tasks), validates them with every problem reported at its line and column,
// and answers questions about their graph. It runs nothing: package flows/engine does.
package flows

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
)

// Flow is a validated flow.
type Flow struct {
	File     string
	Name     string
	Schedule string
	// Timezone is the IANA name the schedule is read in (timezone:), "" when not set.
	Timezone string
	// Overlap says what a scheduled fire does while the previous run of the flow is still
	// going: skip (the default; the fire is recorded as skipped), queue or allow.
	Overlap string
	// Catchup says which fires missed while no scheduler was up are made up for: none
	// (the default), last or all.
	Catchup          string
	MaxParallelTasks int
	// Distributed runs the flow's units on the pool of geoflow worker processes
	// (distributed: true), as geoflow run --distributed does.
	Distributed bool
	// StoreWait is how long a run waits for its store to come back after a fault before
	// it stops, interrupted (store_wait); zero for the default, DefaultStoreWait.
	StoreWait time.Duration
	// MemoryLimit is the run's budget in bytes for responses, spools and decoded
	// features in flight (memory_limit:); zero takes tasks.DefaultMemoryLimit, and
	// geoflow run --memory-limit overrides it.
	MemoryLimit int64
	Tasks       []*Task // in file order
	// Source is the flow's text as written (${VAR} references unexpanded, so no secret
	// from the environment is recorded with a run); runs record it and its Hash, and
	// resume and replay parse it again rather than the file.
	Source []byte
	// Secrets are the values the environment gave to a URL or a header (${VAR}): the
	// runner masks them in its logs and dead letters wherever they appear.
	Secrets []string
	opts    Options // what Source was parsed with, to parse a recorded text alike
	// keys are where the file's keys are, by path, for TaskProblems.
	keys map[string]position
}

// Hash is the hex sha-256 of the flow's Source.
func (f *Flow) Hash() string {
	sum := sha256.Sum256(f.Source)
	return hex.EncodeToString(sum[:])
}

// Reparse parses src (a flow's text as a run recorded it) with the options f was parsed
// with; the result names f's file in its problems.
func (f *Flow) Reparse(src []byte) (*Flow, error) {
	return Parse(f.File, src, f.opts)
}

// Task is one validated task of a flow with its effective settings.
type Task struct {
	ID        string
	Type      string
	DependsOn []string
	Retry     retry.Policy
	RateLimit retry.RateLimit
	// Redirects says which redirects the task's requests follow.
	Redirects retry.Redirects
	Config    tasks.Config
}

// Task returns the task with the given id, or nil.
func (f *Flow) Task(id string) *Task {
	for _, t := range f.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Problem is one thing wrong with a flow file, at a position.
type Problem struct {
	File      string
	Line, Col int
	Msg       string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
}

// ValidationError lists every problem found in a flow file, in file order.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// The YAML shapes of a flow. Pointers tell "not set" from zero so that a task inherits
// only what it does not set itself.
type flowDoc struct {
	Name             string         `yaml:"name"`
	Schedule         string         `yaml:"schedule"`
	Timezone         string         `yaml:"timezone"`
	Overlap          string         `yaml:"overlap" enum:"skip,queue,allow"`
	Catchup          string         `yaml:"catchup" enum:"none,last,all"`
	MaxParallelTasks int            `yaml:"max_parallel_tasks"`
	Distributed      bool           `yaml:"distributed"`
	StoreWait        *time.Duration `yaml:"store_wait"`
	MemoryLimit      tasks.ByteSize `yaml:"memory_limit"`
	Defaults         defaults       `yaml:"defaults"`
	Tasks            deferred       `yaml:"tasks"` // decoded by decodeTasks, which knows each task's type
	Description      string         `yaml:"description"`
}

type defaults struct {
	Retry     retrySpec     `yaml:"retry"`
	RateLimit rateLimitSpec `yaml:"rate_limit"`
	Redirects string        `yaml:"redirects" enum:"same_origin,strip_credentials"`
}

type retrySpec struct {
	MaxAttempts    *int           `yaml:"max_attempts"`
	BaseDelay      *time.Duration `yaml:"base_delay"`
	MaxDelay       *time.Duration `yaml:"max_delay"`
	MaxElapsed     *time.Duration `yaml:"max_elapsed"`
	MaxServerDelay *time.Duration `yaml:"max_server_delay"`
	Jitter         *string        `yaml:"jitter" enum:"full,equal,decorrelated,none"`
	HeaderTimeout  *time.Duration `yaml:"header_timeout"`
	IdleTimeout    *time.Duration `yaml:"idle_timeout"`
	AttemptTimeout *time.Duration `yaml:"attempt_timeout"`
}

type rateLimitSpec struct {
	RequestsPerSecond *float64 `yaml:"requests_per_second"`
	Burst             *int     `yaml:"burst"`
	Concurrency       *int     `yaml:"concurrency"`
	// Shared false keeps the host's pacing to this process, when the store would share
	// it with other processes (PostgreSQL).
	Shared *bool `yaml:"shared"`
}

// common holds the keys every task has, whatever its type.
type common struct {
	Type      string        `yaml:"type"`
	DependsOn []string      `yaml:"depends_on"`
	Retry     retrySpec     `yaml:"retry"`
	RateLimit rateLimitSpec `yaml:"rate_limit"`
	// Redirects: same_origin (default) refuses redirects to another origin, so that
	// the task's credentials stay where they were given; strip_credentials follows
	// them without.
	Redirects string `yaml:"redirects" enum:"same_origin,strip_credentials"`
}

var (
	flowNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)
	taskIDRE   = regexp.MustCompile(`^[a-z0-9_]+$`)
)

// DefaultStoreWait is how long a run waits for a store that stopped answering (a
// database down, a full disk) before it stops, interrupted: the engine's RunOptions.StoreWait,
// the flow's store_wait and geoflow run --store-wait override it.
const DefaultStoreWait = 10 * time.Minute

// Options tell Load how to read a flow. A nil *Options means defaults.
type Options struct {
	// Registry holds the task kinds a flow may use. Required.
	Registry *tasks.Registry
	// LookupEnv expands ${VAR}. Defaults to os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Secrets, when set, gets each parsed flow's Secrets, so that a logger built on it
	// (redact.Set.Handler) masks them in everything the process logs.
	Secrets *redact.Set
}

// Load reads and validates the flow in file. A flow with problems yields a
// *ValidationError listing all of them.
func Load(file string, opts Options) (*Flow, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading flow: %w", err)
	}
	return Parse(file, src, opts)
}

// Parse validates the flow in src; file names it in problems.
func Parse(file string, src []byte, opts Options) (*Flow, error) {
	if opts.Registry == nil {
		return nil, errors.New("flows: no task registry")
	}
	// Editors on Windows start UTF-8 files with a byte order mark; YAML allows it, and
	// the YAML library would read it into the first key ("\ufeffname").
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	d := &decoder{file: file, lookup: opts.LookupEnv, keys: map[string]ast.Node{}}
	if d.lookup == nil {
		d.lookup = os.LookupEnv
	}
	if err := checkLimits(file, src); err != nil {
		return nil, err
	}
	root, err := parseYAML(file, src)
	if err != nil {
		return nil, err
	}
	var doc flowDoc
	var tasksNode ast.Node
	if pairs, ok := mappingOf(root); ok {
		for _, kv := range pairs {
			if keyString(kv) == "tasks" {
				tasksNode = kv.Value
			}
		}
	}
	// decodeStruct sees "tasks" as a known key; its generic value is ignored.
	d.decodeStruct(root, "", "the flow", reflect.ValueOf(&doc))

	f := &Flow{File: file, Source: src, opts: opts, Name: doc.Name, Schedule: doc.Schedule, Timezone: doc.Timezone,
		Overlap: cmp.Or(doc.Overlap, "skip"), Catchup: cmp.Or(doc.Catchup, "none"), MaxParallelTasks: doc.MaxParallelTasks,
		Distributed: doc.Distributed, MemoryLimit: int64(doc.MemoryLimit)}
	d.checkFlowKeys(root, doc)
	if doc.StoreWait != nil {
		f.StoreWait = max(*doc.StoreWait, 0) // a negative one is refused by the decoder
	}
	d.checkRetry(doc.Defaults.Retry, "defaults.retry")
	d.checkRateLimit(doc.Defaults.RateLimit, "defaults.rate_limit")

	d.decodeTasks(tasksNode, f, doc.Defaults, opts.Registry)
	d.checkGraph(f)
	d.placeTasks(f)

	if len(d.problems) > 0 {
		sort.SliceStable(d.problems, func(i, j int) bool {
			a, b := d.problems[i], d.problems[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Col < b.Col
		})
		// The problems may quote values with secrets in them: the caller masks them
		// with the set (the CLI does, for every message it prints).
		opts.Secrets.Add(d.secrets...)
		return nil, &ValidationError{Problems: d.problems}
	}
	f.Secrets = d.secrets
	f.keys = positions(d.keys)
	opts.Secrets.Add(d.secrets...)
	return f, nil
}

// parseYAML returns the document's root node, or a ValidationError for broken YAML.
func parseYAML(file string, src []byte) (ast.Node, error) {
	af, err := parser.ParseBytes(src, 0)
	if err != nil {
		p := Problem{File: file, Msg: "not valid YAML: " + err.Error()}
		var te interface {
			GetMessage() string
			GetToken() *token.Token
		}
		if errors.As(err, &te) {
			p.Msg = "not valid YAML: " + te.GetMessage()
			if tk := te.GetToken(); tk != nil && tk.Position != nil {
				p.Line, p.Col = tk.Position.Line, tk.Position.Column
			}
		}
		return nil, &ValidationError{Problems: []Problem{p}}
	}
	if len(af.Docs) != 1 || af.Docs[0].Body == nil {
		return nil, &ValidationError{Problems: []Problem{{File: file, Msg: "expected exactly one YAML document holding a flow"}}}
	}
	return af.Docs[0].Body, nil
}

func (d *decoder) decodeTasks(n ast.Node, f *Flow, defs defaults, reg *tasks.Registry) {
	pairs, ok := mappingOf(unwrap(n))
	if !ok || len(pairs) == 0 {
		if n == nil {
			d.errorf(nil, "the flow has no tasks: add a `tasks:` mapping")
		} else {
			d.errorf(n, "tasks must be a mapping of task ids to tasks")
		}
		return
	}
	seen := map[string]bool{}
	writers := map[string][]string{} // feature tables and the tasks writing them (checkMirror)
	for _, kv := range pairs {
		id := keyString(kv)
		path := "tasks." + id
		d.keys[path] = kv.Key
		if seen[id] {
			d.errorf(kv.Key, "task %q is defined twice", id)
			continue
		}
		seen[id] = true
		if !taskIDRE.MatchString(id) {
			d.errorf(kv.Key, "task id %q must match [a-z0-9_]+", id)
		}
		what := fmt.Sprintf("task %q", id)
		// The type decides which keys are allowed, so read it first.
		var c common
		var typeNode ast.Node
		if tp, ok := mappingOf(unwrap(kv.Value)); ok {
			for _, p := range tp {
				if keyString(p) == "type" {
					typeNode = p.Value
					d.decodeValue(p.Value, reflect.ValueOf(&c.Type).Elem(), path+".type", "type", nil)
				}
			}
		}
		var cfg tasks.Config
		if c.Type == "" {
			if typeNode == nil {
				d.errorf(kv.Key, "%s has no type (one of %s)", what, strings.Join(reg.Names(), ", "))
			}
		} else if kind, ok := reg.Lookup(c.Type); !ok {
			msg := fmt.Sprintf("%s: unknown task type %q (one of %s)", what, c.Type, strings.Join(reg.Names(), ", "))
			if s := suggest(c.Type, reg.Names()); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			d.errorf(typeNode, "%s", msg)
		} else {
			cfg = kind.NewConfig()
		}
		targets := []reflect.Value{reflect.ValueOf(&c)}
		if cfg != nil {
			targets = append(targets, reflect.ValueOf(cfg))
		}
		before := len(d.problems)
		d.decodeStruct(kv.Value, path, what, targets...)
		d.checkRetry(c.Retry, path+".retry")
		d.checkRateLimit(c.RateLimit, path+".rate_limit")
		if cfg != nil && len(d.problems) == before {
			// Cross-field rules only make sense once every field decoded.
			cfg.Check(&taskProblems{d: d, path: path, what: what, fallback: kv.Key})
			d.checkMirror(cfg, id, kv.Key, writers)
		}
		t := &Task{ID: id, Type: c.Type, DependsOn: c.DependsOn, Config: cfg}
		t.Retry = mergeRetry(defs.Retry, c.Retry)
		t.RateLimit = mergeRateLimit(defs.RateLimit, c.RateLimit)
		t.Redirects = retry.Redirects(cmp.Or(c.Redirects, defs.Redirects, string(retry.RedirectsSameOrigin)))
		f.Tasks = append(f.Tasks, t)
	}
}

// taskProblems lets a task kind report problems at its own keys.
type taskProblems struct {
	d        *decoder
	path     string
	what     string
	fallback ast.Node
}

func (p *taskProblems) At(key string, format string, args ...any) {
	n := p.fallback
	if key != "" {
		if k, ok := p.d.keys[p.path+"."+key]; ok {
			n = k
		}
	}
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = key + ": " + msg
	}
	p.d.errorf(n, "%s: %s", p.what, msg)
}
