package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/schedule"
)

func newScheduleCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Look at the schedules of flows",
	}
	cmd.AddCommand(newScheduleListCmd(g))
	return cmd
}

func newScheduleListCmd(g *globals) *cobra.Command {
	var (
		dir        string
		n          int
		asJS, wide bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scheduled flows of a directory with their next fire times, in each flow's time zone",
		Long: "List every flow of --flows that has a schedule:, with its next fire times in its own time zone\n" +
			"(UTC unless timezone: or CRON_TZ= says otherwise). Needs no database.\n\n" +
			"Exit codes: 0 when every flow file loads; 1 when some do not (their problems are printed).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return fmt.Errorf("--next must be at least 1")
			}
			infos, err := schedule.List(dir, g.flowOptions(registry()), time.Now(), n)
			if err != nil {
				return err
			}
			bad := 0
			for _, fi := range infos {
				if fi.Problem != "" {
					bad++
					fmt.Fprintln(g.stderr, indentProblem(fi.File, fi.Problem))
				}
			}
			if asJS {
				if err := writeDLQJSON(g.stdout, infos); err != nil {
					return err
				}
			} else if err := printSchedules(g, infos, outWidth(g.stdout, wide)); err != nil {
				return err
			}
			if bad > 0 {
				return &exitError{code: ExitError, err: fmt.Errorf("%d flow file%s in %s did not load", bad, plural(bad), dir)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "flows", "flows", "directory of flow files")
	cmd.Flags().IntVar(&n, "next", 3, "how many fire times to list per flow")
	cmd.Flags().BoolVar(&asJS, "json", false, "print a JSON array, for scripts")
	cmd.Flags().BoolVar(&wide, "wide", false, wideUsage)
	return cmd
}

// indentProblem prints a load problem; validation problems already name their file.
func indentProblem(file, problem string) string {
	if strings.HasPrefix(problem, file) {
		return problem
	}
	return file + ": " + problem
}

// printSchedules writes the scheduled flows as a table within width (0: every value whole).
func printSchedules(g *globals, infos []schedule.FlowInfo, width int) error {
	t := table{cols: []column{{head: "FLOW", free: true, min: 8}, {head: "SCHEDULE", free: true, min: 9}, {head: "TIMEZONE", drop: 1},
		{head: "OVERLAP", drop: 3}, {head: "CATCHUP", drop: 2}, {head: "NEXT FIRES", free: true, min: 23}}}
	for _, fi := range infos {
		if fi.Name == "" {
			continue
		}
		next := make([]string, len(fi.NextFires))
		for i, t := range fi.NextFires {
			next[i] = t.Format("2006-01-02 15:04:05 MST")
		}
		if len(next) == 0 {
			next = []string{"never"}
		}
		t.add(fi.Name, fi.Schedule, fi.Timezone, fi.Overlap, fi.Catchup, strings.Join(next, ", "))
	}
	if len(t.rows) == 0 {
		fmt.Fprintln(g.stdout, "no scheduled flows")
		return nil
	}
	return t.write(g.stdout, width)
}
