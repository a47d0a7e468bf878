package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

func newRunsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Look at the run history",
	}
	cmd.AddCommand(newRunsListCmd(g), newRunsShowCmd(g))
	return cmd
}

func newRunsListCmd(g *globals) *cobra.Command {
	var (
		filter store.RunFilter
		asJS   bool
		wide   bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, latest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if filter.Limit < 1 {
				return fmt.Errorf("--limit must be at least 1")
			}
			switch store.State(filter.Status) {
			case "", store.Running, store.Done, store.Incomplete, store.Failed, store.Interrupted, store.Crashed:
			default:
				return fmt.Errorf("--status %q: use running, done, incomplete, failed, interrupted or crashed", filter.Status)
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.ListRuns(cmd.Context(), filter)
			if err != nil {
				return err
			}
			if asJS {
				if runs == nil {
					runs = []store.RunRecord{}
				}
				return writeDLQJSON(g.stdout, runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(g.stdout, "no runs")
				return nil
			}
			return printRuns(g.stdout, runs, outWidth(g.stdout, wide))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&wide, "wide", false, wideUsage)
	f.StringVar(&filter.Flow, "flow", "", "only runs of this flow")
	f.StringVar(&filter.Status, "status", "", "only runs in this status: running, done, incomplete (fewer features stored than the server counted), failed, interrupted, crashed (recorded as running, but no process holds it)")
	f.IntVar(&filter.Limit, "limit", 50, "list at most this many runs")
	f.BoolVar(&asJS, "json", false, "print a JSON array, for scripts")
	return cmd
}

func newRunsShowCmd(g *globals) *cobra.Command {
	var asJS, wide bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one run, its tasks, and what its requests asked of each host",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return fmt.Errorf("run id %q: want a positive whole number", args[0])
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			run, err := st.GetRun(cmd.Context(), id)
			if err != nil {
				return err
			}
			if asJS {
				return writeDLQJSON(g.stdout, run)
			}
			return printRun(g.stdout, run, outWidth(g.stdout, wide))
		},
	}
	cmd.Flags().BoolVar(&asJS, "json", false, "print JSON, for scripts")
	cmd.Flags().BoolVar(&wide, "wide", false, wideUsage)
	return cmd
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

// fmtArea is a run's area as geoflow run --bbox takes it, "-" for none.
func fmtArea(a *[4]float64) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%g,%g,%g,%g", a[0], a[1], a[2], a[3])
}

// printRuns writes the runs as a table within width (0: every column whole); AREA marks
// the runs restricted to an area (geoflow run --bbox), whose box --wide shows.
func printRuns(w io.Writer, runs []store.RunRecord, width int) error {
	t := table{cols: []column{{head: "ID"}, {head: "FLOW", free: true, min: 8}, {head: "STATUS"}, {head: "TRIGGER", drop: 3},
		{head: "SCHEDULED FOR", drop: 5}, {head: "STARTED", drop: 1}, {head: "FINISHED", drop: 4}, {head: "UNITS DONE"}, {head: "DEAD"},
		{head: "INSERTED", drop: 2}, {head: "PRESENT", drop: 6}, {head: "TWICE", drop: 7}, {head: "AREA", short: "bbox"}}}
	for _, r := range runs {
		t.add(r.ID, r.Flow, r.Status, r.Trigger, fmtTime(r.ScheduledFor), fmtTime(&r.StartedAt), fmtTime(r.FinishedAt),
			fmt.Sprintf("%d/%d", r.UnitsDone, r.UnitsTotal), r.UnitsDead, r.FeaturesInserted, r.FeaturesSkipped-r.FeaturesOverlap, r.FeaturesOverlap, fmtArea(r.Area))
	}
	return t.write(w, width)
}

// runDetail is the key-value part of geoflow runs show.
func runDetail(r store.RunRecord) [][2]string {
	rows := [][2]string{{"run", strconv.FormatInt(r.ID, 10)}, {"flow", r.Flow}, {"status", string(r.Status)},
		{"trigger", r.Trigger}, {"scheduled for", fmtTime(r.ScheduledFor)}, {"started", fmtTime(&r.StartedAt)}, {"finished", fmtTime(r.FinishedAt)}}
	add := func(k, format string, a ...any) { rows = append(rows, [2]string{k, fmt.Sprintf(format, a...)}) }
	if r.Area != nil {
		add("area", "%s (--bbox: only this lon/lat box was harvested)", fmtArea(r.Area))
	} else {
		add("area", "the whole flow (no --bbox)")
	}
	if verb := r.AdoptionVerb(); verb != "" {
		add(verb, "%s (adopted %s, after the starting process was gone)", r.FinishedBy, fmtTime(r.AdoptedAt))
	}
	add("units", "%d of %d done, %d dead", r.UnitsDone, r.UnitsTotal, r.UnitsDead)
	add("features", "%s, %d updated", featureFates(r.FeaturesInserted, r.FeaturesSkipped, r.FeaturesOverlap), r.FeaturesUpdated)
	if r.RowsAffected > 0 || slices.ContainsFunc(r.Tasks, func(t store.TaskRecord) bool { return t.Type == "sql" }) {
		add("SQL steps", "%d rows affected", r.RowsAffected)
	}
	if r.FeaturesRejected > 0 {
		add("refused", "%d features could not be stored (dead letters of class rejected: geoflow dlq list --run %d --class rejected)", r.FeaturesRejected, r.ID)
	}
	if r.FeaturesDeleted > 0 {
		add("deleted", "%d features gone upstream were deleted from mirror tables (geoflow changes %d)", r.FeaturesDeleted, r.ID)
	}
	if r.FeaturesMerged > 0 {
		add("equal payloads", "%d features had the payload of a stored feature with another id, and are that row", r.FeaturesMerged)
	}
	if r.Status == store.Incomplete {
		add("incomplete", "fewer features are stored than the server counted; units found short are dead letters of class incomplete (geoflow dlq list --run %d --class incomplete)", r.ID)
	}
	if r.Error != "" {
		add("error", "%s", r.Error)
	}
	return rows
}

// printRun writes geoflow runs show within width (0: every value whole, on one line).
func printRun(w io.Writer, r store.RunRecord, width int) error {
	if err := writeDetail(w, runDetail(r), width); err != nil {
		return err
	}
	if len(r.Tasks) == 0 {
		return printHostTables(w, r.RunHosts, width)
	}
	fmt.Fprintln(w)
	t := table{cols: []column{{head: "TASK", free: true, min: 8}, {head: "TYPE"}, {head: "STATE"}, {head: "STARTED", drop: 9},
		{head: "FINISHED", drop: 10}, {head: "UNITS DONE"}, {head: "DEAD"}, {head: "INSERTED"}, {head: "UPDATED", drop: 5},
		{head: "UNCHANGED", drop: 6}, {head: "TWICE", drop: 11}, {head: "DELETED", drop: 7}, {head: "CLOSED", drop: 8},
		{head: "REFUSED", drop: 4}, {head: "ERROR", free: true, min: 20}}}
	for _, tr := range r.Tasks {
		// A mirror knows its distinct unchanged features; other tables count the
		// deliveries of features earlier runs stored. TWICE are those the run had stored
		// itself: returned again by overlapping tiles or pages.
		unchanged := tr.FeaturesSkipped - tr.FeaturesOverlap
		if tr.FeaturesUnchanged != nil {
			unchanged = *tr.FeaturesUnchanged
		}
		t.add(tr.Task, tr.Type, tr.State, fmtTime(tr.StartedAt), fmtTime(tr.FinishedAt), fmt.Sprintf("%d/%d", tr.UnitsDone, tr.UnitsTotal),
			tr.UnitsDead, tr.FeaturesInserted, tr.FeaturesUpdated, unchanged, tr.FeaturesOverlap, tr.FeaturesDeleted, tr.VersionsClosed,
			tr.FeaturesRejected, dlq.Reason(tr.Error))
	}
	if err := t.write(w, width); err != nil {
		return err
	}
	for _, tr := range r.Tasks {
		if tr.State == store.Incomplete {
			fmt.Fprintln(w)
			writeIndented(w, tr.Task+": "+tr.Error, 0, width)
		}
		if tr.MirrorNote != "" {
			fmt.Fprintln(w)
			writeIndented(w, tr.Task+": "+tr.MirrorNote, 0, width)
		}
		if tr.Type == "sql" {
			fmt.Fprintf(w, "\n%s: %d rows affected by its SQL\n", tr.Task, tr.RowsAffected)
		}
	}
	return printHostTables(w, r.RunHosts, width)
}
