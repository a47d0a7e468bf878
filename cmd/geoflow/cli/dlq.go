package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
)

func newDLQCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Triage dead letters: units that failed for good",
		Long: "Units that still fail after the rate-limit handler gives up land in the dead-letter queue, one entry\n" +
			"per unit, with the redacted request, the error class and a snippet of the last response.\n" +
			"List and inspect them, replay them once the cause is fixed, or discard them.",
	}
	cmd.AddCommand(newDLQListCmd(g), newDLQShowCmd(g), newDLQStatsCmd(g), newDLQReplayCmd(g),
		newDLQDiscardCmd(g), newDLQPurgeCmd(g))
	return cmd
}

// filterFlags are the filters list, stats and replay share.
type filterFlags struct {
	args   dlq.FilterArgs
	status string
}

func (ff *filterFlags) add(f *pflag.FlagSet, defaultStatus string) {
	f.StringVar(&ff.args.Flow, "flow", "", "only entries of this flow")
	f.StringVar(&ff.args.Task, "task", "", "only entries of this task")
	f.Int64Var(&ff.args.Run, "run", 0, "only entries of this run id")
	f.StringVar(&ff.args.Class, "class", "", "only this error class: "+classNames())
	f.StringVar(&ff.status, "status", defaultStatus, "only this status: open, replayed, discarded, or all")
	f.StringVar(&ff.args.Since, "since", "", "only entries that last failed since this age (24h, 7d) or RFC 3339 time")
	f.StringVar(&ff.args.BBox, "bbox", "", "only entries whose unit intersects minx,miny,maxx,maxy (lon/lat)")
	f.StringVar(&ff.args.Host, "host", "", "only entries whose request went to this host[:port] (as dlq stats names it; "+dlq.NoHost+" for none)")
}

func (ff *filterFlags) filter() (dlq.Filter, error) {
	a := ff.args
	if !strings.EqualFold(ff.status, "all") {
		a.Status = ff.status
	}
	return a.Parse(time.Now())
}

func classNames() string {
	var names []string
	for _, c := range dlq.Classes() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

func writeDLQJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newDLQListCmd(g *globals) *cobra.Command {
	var (
		ff    filterFlags
		asJS  bool
		wide  bool
		limit int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead letters (open ones unless --status says otherwise)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			f.Limit = limit
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			entries, err := st.ListDeadLetters(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJS {
				return writeDLQJSON(g.stdout, nonNilEntries(entries))
			}
			if len(entries) == 0 {
				fmt.Fprintln(g.stdout, "no dead letters")
				return nil
			}
			return printEntries(g.stdout, entries, outWidth(g.stdout, wide))
		},
	}
	ff.add(cmd.Flags(), string(dlq.StatusOpen))
	cmd.Flags().BoolVar(&wide, "wide", false, wideUsage)
	cmd.Flags().BoolVar(&asJS, "json", false, "print a JSON array, for scripts")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many entries (0: all)")
	return cmd
}

func nonNilEntries(es []dlq.Entry) []dlq.Entry {
	if es == nil {
		return []dlq.Entry{}
	}
	return es
}

// printEntries writes dead letters as a table within width (0: every column whole); the
// ERROR column starts with the server's reason (dlq.Reason), `dlq show` has the whole text.
func printEntries(w io.Writer, entries []dlq.Entry, width int) error {
	t := table{cols: []column{{head: "ID"}, {head: "RUN"}, {head: "FLOW", free: true, min: 8, drop: 5}, {head: "TASK", free: true, min: 8},
		{head: "UNIT", free: true, min: 8}, {head: "CLASS"}, {head: "HTTP", drop: 3}, {head: "ATTEMPTS", drop: 4}, {head: "STATUS", drop: 1},
		{head: "LAST FAILED", drop: 2}, {head: "ERROR", free: true, min: 32}}}
	for _, e := range entries {
		status := "-"
		if e.HTTPStatus != 0 {
			status = strconv.Itoa(e.HTTPStatus)
		}
		t.add(e.ID, e.RunID, e.Flow, e.Task, e.Unit, e.Class, status, e.Attempts, e.Status,
			e.LastFailedAt.Local().Format(time.DateTime), dlq.Reason(e.Error))
	}
	return t.write(w, width)
}

// dlqOneLine flattens s to one line of at most n runes.
func dlqOneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func parseDLQID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%q is not a dead-letter id (a positive number, as geoflow dlq list shows)", s)
	}
	return id, nil
}

func parseDLQIDs(args []string) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := parseDLQID(a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func newDLQShowCmd(g *globals) *cobra.Command {
	var asJS, wide bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show everything about one dead letter: request, error, response snippet, replays",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseDLQID(args[0])
			if err != nil {
				return err
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			e, err := st.GetDeadLetter(cmd.Context(), id)
			if err != nil {
				return err
			}
			if asJS {
				return writeDLQJSON(g.stdout, e)
			}
			printEntry(g.stdout, e, outWidth(g.stdout, wide))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJS, "json", false, "print JSON, for scripts")
	cmd.Flags().BoolVar(&wide, "wide", false, wideUsage)
	return cmd
}

// printEntry writes geoflow dlq show: its fields, then the whole error, request body and
// response snippet, each wrapped within width (0: as they are) and indented.
func printEntry(w io.Writer, e dlq.Entry, width int) {
	rows := [][2]string{{"id:", strconv.FormatInt(e.ID, 10)}, {"status:", string(e.Status)}, {"flow:", e.Flow},
		{"task:", e.Task}, {"run:", strconv.FormatInt(e.RunID, 10)}, {"unit:", e.Unit}}
	row := func(k, v string) { rows = append(rows, [2]string{k + ":", v}) }
	if b := e.BBoxArray(); b != nil {
		row("bbox", fmt.Sprintf("%g,%g,%g,%g", b[0], b[1], b[2], b[3]))
	}
	row("class", string(e.Class))
	if e.HTTPStatus != 0 {
		row("http status", strconv.Itoa(e.HTTPStatus))
	}
	row("attempts", strconv.Itoa(e.Attempts))
	row("first failed", e.FirstFailedAt.Local().Format(time.RFC3339))
	row("last failed", e.LastFailedAt.Local().Format(time.RFC3339))
	if e.Request.URL != "" || e.Request.Method != "" {
		row("request", strings.TrimSpace(e.Request.Method+" "+e.Request.URL))
	}
	row("reason", dlq.Reason(e.Error))
	writeDetail(w, rows, width)
	fmt.Fprintln(w, "error:")
	writeIndented(w, e.Error, 2, width)
	if e.Request.Body != "" {
		fmt.Fprintln(w, "request body:")
		writeIndented(w, e.Request.Body, 2, width)
	}
	if e.Snippet != "" {
		fmt.Fprintln(w, "response snippet:")
		writeIndented(w, e.Snippet, 2, width)
	}
	if len(e.History) > 0 {
		fmt.Fprintln(w, "replays:")
		for _, h := range e.History {
			line := fmt.Sprintf("%s  %s", h.At.Local().Format(time.RFC3339), h.Result)
			if h.Class != "" {
				line += " " + string(h.Class)
			}
			if h.Error != "" {
				line += ": " + dlq.Reason(h.Error)
			}
			writeIndented(w, line, 2, width)
		}
	}
}

func newDLQStatsCmd(g *globals) *cobra.Command {
	var (
		ff   filterFlags
		asJS bool
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count dead letters by class, task, host and status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			rows, err := st.DeadLetterStats(cmd.Context(), f)
			if err != nil {
				return err
			}
			stats := dlq.Aggregate(rows)
			if asJS {
				return writeDLQJSON(g.stdout, stats)
			}
			fmt.Fprintf(g.stdout, "%d dead letter%s\n", stats.Total, plural(int(stats.Total)))
			for _, sec := range []struct {
				title  string
				counts []dlq.Count
			}{{"CLASS", stats.ByClass}, {"TASK", stats.ByTask}, {"HOST", stats.ByHost}, {"STATUS", stats.ByStatus}} {
				if len(sec.counts) == 0 {
					continue
				}
				fmt.Fprintln(g.stdout)
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintf(tw, "%s\tCOUNT\t\n", sec.title)
				for _, c := range sec.counts {
					fmt.Fprintf(tw, "%s\t%d\t\n", c.Key, c.N)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			return nil
		},
	}
	ff.add(cmd.Flags(), "all")
	cmd.Flags().BoolVar(&asJS, "json", false, "print JSON, for scripts")
	return cmd
}

func newDLQReplayCmd(g *globals) *cobra.Command {
	var (
		ff     filterFlags
		all    bool
		dryRun bool
		grace  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "replay [ID...]",
		Short: "Execute dead units again, through the same handler and sink",
		Long: "Replay executes exactly the units of the named open dead letters again (or, with --all or\n" +
			"filters, of every open entry they select) under their original run, loading the run's flow file.\n" +
			"A success marks the entry replayed; a failure updates it.\n\n" +
			"Exit codes: 0 every unit succeeded; 1 error; 2 some units failed again; 3 every unit succeeded,\n" +
			"but a run is still incomplete (a task's server still counts features that are not stored); 5 none failed\n" +
			"again, but some were not sent: their host's circuit breaker stayed open (the host is still down).",
		RunE: func(cmd *cobra.Command, args []string) error {
			return replayDLQ(cmd, g, args, ff, all, dryRun, grace)
		},
	}
	ff.add(cmd.Flags(), string(dlq.StatusOpen))
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "replay every open entry (the filters may narrow it)")
	f.BoolVar(&dryRun, "dry-run", false, "list what would be replayed, and do nothing")
	f.DurationVar(&grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight units may take to finish")
	return cmd
}

func replayDLQ(cmd *cobra.Command, g *globals, args []string, ff filterFlags, all, dryRun bool, grace time.Duration) error {
	ctx := cmd.Context()
	ids, err := parseDLQIDs(args)
	if err != nil {
		return err
	}
	filtered := false
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "flow", "task", "run", "class", "since", "bbox", "host":
			filtered = true
		}
	})
	f, err := ff.filter()
	if err != nil {
		return err
	}
	sel := dlq.Selection{IDs: ids, All: all, Filter: f, Filtered: filtered}
	if err := sel.Check(); err != nil {
		return err
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	st, err := openExisting(ctx, g, true)
	if err != nil {
		return err
	}
	defer st.Close()
	entries, err := dlq.SelectReplay(ctx, st, sel)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintln(g.stdout, "no open dead letters to replay")
		return nil
	}
	if dryRun {
		fmt.Fprintf(g.stdout, "would replay %d dead letter%s:\n", len(entries), plural(len(entries)))
		return printEntries(g.stdout, entries, outWidth(g.stdout, false))
	}
	handler := retry.New(&retry.Options{Logger: log, Shared: sharedPacing(st)})
	res, err := engine.Replay(ctx, entries, engine.ReplayOptions{
		Store:    stores(st),
		HTTP:     handler,
		Registry: registry(),
		Secrets:  g.secrets,
		Logger:   log,
		Grace:    grace,
	})
	handler.FlushRetrySummaries(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	replayed := 0
	for _, o := range res.Outcomes {
		if o.OK {
			replayed++
			fmt.Fprintf(g.stdout, "replayed %d: run %d, task %s, unit %s\n", o.Entry.ID, o.Entry.RunID, o.Entry.Task, o.Entry.Unit)
			continue
		}
		fmt.Fprintf(g.stdout, "still open %d: run %d, task %s, unit %s: %s\n", o.Entry.ID, o.Entry.RunID, o.Entry.Task, o.Entry.Unit, dlqOneLine(o.Error, 200))
	}
	fmt.Fprintf(g.stdout, "%d of %d dead letters replayed (%d units executed, %d failed again, %d not sent)\n",
		replayed, len(res.Outcomes), res.Units, res.Dead, res.NotSent)
	for _, n := range res.Notes {
		fmt.Fprintf(g.stdout, "note: %s\n", n)
	}
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		return &exitError{code: se.ExitCode(), err: fmt.Errorf("interrupted by %s: what was not replayed is still open", se.Name())}
	}
	return replayExit(res)
}

// replayExit is how a replay that ran to its end exits: 2 when some units failed again
// (or entries could not be replayed), 5 when none did but some units were not sent
// (their host's breaker stayed open), 3 when all succeeded but runs are incomplete.
func replayExit(res *engine.ReplayResult) error {
	switch {
	case res.Dead > 0 || res.Interrupted > 0 || (!res.OK() && res.NotSent == 0):
		return &exitError{code: ExitDeadLetters, err: errors.New("some units failed again: geoflow dlq list --status open")}
	case res.NotSent > 0:
		return &exitError{code: ExitNotSent, err: errors.New("some units were not sent (their host's circuit breaker stayed open); replay them once the host is back")}
	case len(res.Incomplete) > 0:
		return &exitError{code: ExitIncomplete, err: fmt.Errorf("runs %v are still incomplete: geoflow runs show %d", res.Incomplete, res.Incomplete[0])}
	}
	return nil
}

func newDLQDiscardCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "discard ID...",
		Short: "Give up open dead letters: they stay for the record but are no longer open",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseDLQIDs(args)
			if err != nil {
				return err
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			done, err := dlq.Discard(cmd.Context(), st, ids)
			fmt.Fprintf(g.stdout, "discarded %d dead letter%s\n", len(done), plural(len(done)))
			return err
		},
	}
}

func newDLQPurgeCmd(g *globals) *cobra.Command {
	var (
		olderThan   string
		includeOpen bool
	)
	cmd := &cobra.Command{
		Use:   "purge --older-than AGE",
		Short: "Delete replayed and discarded dead letters that last failed longer ago than AGE",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return errors.New("--older-than is required, such as --older-than 30d")
			}
			age, err := dlq.ParseAge(olderThan)
			if err != nil {
				return fmt.Errorf("--older-than %q: %w", olderThan, err)
			}
			statuses := []dlq.Status{dlq.StatusReplayed, dlq.StatusDiscarded}
			if includeOpen {
				statuses = append(statuses, dlq.StatusOpen)
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.PurgeDeadLetters(cmd.Context(), time.Now().Add(-age), statuses...)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "purged %d dead letter%s\n", n, plural(int(n)))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age of the last failure: 30d, 2w, 36h...")
	cmd.Flags().BoolVar(&includeOpen, "include-open", false, "purge open entries too (they are never replayed then)")
	return cmd
}
