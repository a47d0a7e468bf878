package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/tasks"
)

// CheckOnline asks the server of every task of f that can be checked so (tasks.Online)
// whether the task fits it (geoflow validate --online): its layer exists, the formats
// and CRS it asks for are offered, its bbox meets the layer's advertised extent. Each
// task gets the Env its units would, without a store: HTTP through h with the task's
// retry, rate-limit and redirect settings. It returns the problems found, at the keys
// they concern, and an error for each server that could not be asked, naming the task
// and the host. ctx bounds the whole check.
func CheckOnline(ctx context.Context, f *flows.Flow, h tasks.HTTP, log *slog.Logger) ([]flows.Problem, error) {
	var problems []flows.Problem
	var errs []error
	for _, t := range f.Tasks {
		o, ok := t.Config.(tasks.Online)
		if !ok {
			continue
		}
		env := &tasks.Env{Flow: f.Name, TaskID: t.ID, Logger: log.With("task", t.ID), HTTP: h,
			Retry: t.Retry, RateLimit: t.RateLimit, Redirects: t.Redirects}
		p := f.TaskProblems(t.ID)
		if err := o.CheckOnline(ctx, env, p); err != nil {
			errs = append(errs, fmt.Errorf("task %q: asking %s: %w", t.ID, host(t.Config), err))
		}
		problems = append(problems, p.Problems()...)
	}
	return problems, errors.Join(errs...)
}

// host is the host of the task's server (tasks.Source), or "its server" when it does not
// say.
func host(c tasks.Config) string {
	if s, ok := c.(tasks.Source); ok {
		if u, err := url.Parse(s.SourceURL()); err == nil && u.Host != "" {
			return u.Host
		}
	}
	return "its server"
}
