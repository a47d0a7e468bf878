package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
)

// onlineOptions are validate's --online and --timeout.
type onlineOptions struct {
	enabled bool
	timeout time.Duration
}

func (o *onlineOptions) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.enabled, "online", false, "also ask each task's server whether the task fits it: its layer exists, its format and CRS are offered, its bbox meets the layer's extent")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "with --online, how long all the servers together may take to answer")
}

// onlineCheck is what validate --online checks a valid flow with: each task's server
// (engine.CheckOnline), all within --timeout of the first request. It prints what it
// finds, problems as file:line:col like the offline ones, and tells whether the flow
// passed. Without --online it checks nothing.
func onlineCheck(cmd *cobra.Command, g *globals, o onlineOptions) (check func(path string, f *flows.Flow) bool, done func(), err error) {
	if !o.enabled {
		return func(string, *flows.Flow) bool { return true }, func() {}, nil
	}
	log, err := g.logger()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	h := retry.New(&retry.Options{Logger: log})
	check = func(path string, f *flows.Flow) bool {
		problems, err := engine.CheckOnline(ctx, f, h, log)
		for _, p := range problems {
			fmt.Fprintln(g.stderr, g.secrets.String(p.String()))
		}
		if err != nil {
			msg := err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				msg += fmt.Sprintf(" (no answer within --timeout %s)", o.timeout)
			}
			for _, line := range strings.Split(msg, "\n") {
				fmt.Fprintf(g.stderr, "%s: %s\n", path, g.secrets.String(line))
			}
		}
		return len(problems) == 0 && err == nil
	}
	return check, func() {
		h.FlushRetrySummaries(context.WithoutCancel(ctx))
		cancel()
	}, nil
}
