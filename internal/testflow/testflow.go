// Package testflow runs a one-task flow for the tests of a task kind: the flow's YAML
// around the task's keys, a quick retry policy, parsing with the kind registered, and a
// run against a real store with its log captured. Tests only.
package testflow

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Stores splits a store into the parts the engine takes, as the commands do (the queue
// where the store has one).
func Stores(st store.Store) engine.Stores {
	s := engine.Stores{Runs: st, Units: st, DeadLetters: st,
		Tasks: tasks.Stores{Features: st, Mirror: st, Tiles: st, Assets: st, Records: st, Tables: st, Changes: st, Queries: st, SQL: st}}
	if q, ok := st.(store.Queue); ok {
		s.Queue = q
	}
	return s
}

// Run runs a flow of one task, parcels, of kind at url, with the task's other keys given
// as YAML lines, storing into st and logging into logs. opts.HTTP defaults to a fresh
// handler. A flow that does not parse or a run that cannot start fails the test.
func Run(t *testing.T, kind tasks.Kind, url, taskYAML string, st store.Store, logs *bytes.Buffer, opts engine.RunOptions) *engine.Result {
	t.Helper()
	src := fmt.Sprintf(`
name: test
defaults:
  retry: {base_delay: 1ms, max_delay: 20ms}
  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}
tasks:
  parcels:
    type: %s
    url: %s
%s`, kind.Name, url, Indent(taskYAML, "    "))
	reg := &tasks.Registry{}
	reg.Register(kind)
	f, err := flows.Parse("test.yaml", []byte(src), flows.Options{Registry: reg})
	if err != nil {
		t.Fatalf("flow: %v\n%s", err, src)
	}
	log := slog.New(slog.NewTextHandler(logs, nil))
	opts.Store, opts.Logger = Stores(st), log
	if opts.HTTP == nil {
		opts.HTTP = retry.New(&retry.Options{Logger: log, Seed: 1})
	}
	res, err := engine.Run(context.Background(), f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Indent puts prefix before each line of s, its own indentation dropped.
func Indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString(prefix + strings.TrimSpace(l) + "\n")
	}
	return b.String()
}

// Tail is the end of a log, for a failure message.
func Tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
