package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/geoflow/geoflow/store"
	"github.com/spf13/cobra"
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
			st, err := openStore(cmd.Context(), g, true)
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
			return printRuns(g.stdout, runs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&filter.Flow, "flow", "", "only runs of this flow")
	f.StringVar(&filter.Status, "status", "", "only runs in this status: running, done, incomplete (fewer features stored than the server counted), failed, interrupted, crashed (recorded as running, but no process holds it)")
	f.IntVar(&filter.Limit, "limit", 50, "list at most this many runs")
	f.BoolVar(&asJS, "json", false, "print a JSON array, for scripts")
	return cmd
}

func newRunsShowCmd(g *globals) *cobra.Command {
	var asJS bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one run, its tasks, and what its requests asked of each host",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return fmt.Errorf("run id %q: want a positive whole number", args[0])
			}
			st, err := openStore(cmd.Context(), g, true)
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
			return printRun(g.stdout, run)
		},
	}
	cmd.Flags().BoolVar(&asJS, "json", false, "print JSON, for scripts")
	return cmd
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

func printRuns(w io.Writer, runs []store.RunRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFLOW\tSTATUS\tTRIGGER\tSCHEDULED FOR\tSTARTED\tFINISHED\tUNITS DONE\tDEAD\tINSERTED\tSKIPPED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\n", r.ID, r.Flow, r.Status, r.Trigger,
			fmtTime(r.ScheduledFor), fmtTime(&r.StartedAt), fmtTime(r.FinishedAt),
			r.UnitsDone, r.UnitsTotal, r.UnitsDead, r.FeaturesInserted, r.FeaturesSkipped)
	}
	return tw.Flush()
}

func printRun(w io.Writer, r store.RunRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%d\n", r.ID)
	fmt.Fprintf(tw, "flow\t%s\n", r.Flow)
	fmt.Fprintf(tw, "status\t%s\n", r.Status)
	fmt.Fprintf(tw, "trigger\t%s\n", r.Trigger)
	fmt.Fprintf(tw, "scheduled for\t%s\n", fmtTime(r.ScheduledFor))
	fmt.Fprintf(tw, "started\t%s\n", fmtTime(&r.StartedAt))
	fmt.Fprintf(tw, "finished\t%s\n", fmtTime(r.FinishedAt))
	if verb := r.AdoptionVerb(); verb != "" {
		fmt.Fprintf(tw, "%s\t%s (adopted %s, after the starting process was gone)\n", verb, r.FinishedBy, fmtTime(r.AdoptedAt))
	}
	fmt.Fprintf(tw, "units\t%d of %d done, %d dead\n", r.UnitsDone, r.UnitsTotal, r.UnitsDead)
	fmt.Fprintf(tw, "features\t%s, %d updated\n", featureFates(r.FeaturesInserted, r.FeaturesSkipped, r.FeaturesOverlap), r.FeaturesUpdated)
	if r.RowsAffected > 0 || slices.ContainsFunc(r.Tasks, func(t store.TaskRecord) bool { return t.Type == "sql" }) {
		fmt.Fprintf(tw, "SQL steps\t%d rows affected\n", r.RowsAffected)
	}
	if r.FeaturesRejected > 0 {
		fmt.Fprintf(tw, "refused\t%d features could not be stored (dead letters of class rejected: geoflow dlq list --run %d --class rejected)\n", r.FeaturesRejected, r.ID)
	}
	if r.FeaturesDeleted > 0 {
		fmt.Fprintf(tw, "deleted\t%d features gone upstream were deleted from mirror tables (geoflow changes %d)\n", r.FeaturesDeleted, r.ID)
	}
	if r.FeaturesMerged > 0 {
		fmt.Fprintf(tw, "equal payloads\t%d features had the payload of a stored feature with another id, and are that row\n", r.FeaturesMerged)
	}
	if r.Status == store.Incomplete {
		fmt.Fprintf(tw, "incomplete\tfewer features are stored than the server counted; units found short are dead letters of class incomplete (geoflow dlq list --run %d --class incomplete)\n", r.ID)
	}
	if r.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", r.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Tasks) == 0 {
		return printHostTables(w, r.RunHosts)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tTYPE\tSTATE\tSTARTED\tFINISHED\tUNITS DONE\tDEAD\tINSERTED\tUPDATED\tUNCHANGED\tDELETED\tCLOSED\tREFUSED\tERROR")
	for _, t := range r.Tasks {
		// A mirror knows its distinct unchanged features; other tables count each
		// delivery of a stored feature (tile edges deliver some twice).
		unchanged := t.FeaturesSkipped
		if t.FeaturesUnchanged != nil {
			unchanged = *t.FeaturesUnchanged
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", t.Task, t.Type, t.State, fmtTime(t.StartedAt), fmtTime(t.FinishedAt),
			t.UnitsDone, t.UnitsTotal, t.UnitsDead, t.FeaturesInserted, t.FeaturesUpdated, unchanged, t.FeaturesDeleted, t.VersionsClosed,
			t.FeaturesRejected, dlqOneLine(t.Error, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Tasks {
		if t.State == store.Incomplete {
			fmt.Fprintf(w, "\n%s: %s\n", t.Task, t.Error)
		}
		if t.MirrorNote != "" {
			fmt.Fprintf(w, "\n%s: %s\n", t.Task, t.MirrorNote)
		}
		if t.Type == "sql" {
			fmt.Fprintf(w, "\n%s: %d rows affected by its SQL\n", t.Task, t.RowsAffected)
		}
	}
	return printHostTables(w, r.RunHosts)
}
