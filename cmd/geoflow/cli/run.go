package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

type runFlags struct {
	resume         string // "" (a new run), "latest", or a run id
	useCurrentFlow bool
	// allowMassDelete lifts mirror tasks' safety rail.
	allowMassDelete bool
	bbox            string
	bboxCRS         string
	only            []string
	withDownstream  bool
	grace           time.Duration
	progress        string
	cpuProfile      string
	distributed     bool
	storeWait       time.Duration
	memoryLimit     string
}

func newRunCmd(g *globals) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run FLOW",
		Short: "Run a flow once, end to end",
		Long: "Run a flow: migrations first, then its tasks in dependency order.\n\n" +
			"Exit codes: 0 success; 1 error (a task failed); 2 finished, but some units ended in the dead-letter queue;\n" +
			"3 finished and nothing failed, but the run is incomplete: a task stored fewer features than\n" +
			"its server counted (geoflow runs show, geoflow dlq list --class incomplete);\n" +
			"4 interrupted: the store (the database, the GeoPackage's disk) stayed unavailable for --store-wait\n" +
			"(resume with --resume once it is back); 130/143 interrupted by SIGINT/SIGTERM (resume with --resume).\n" +
			"When several apply, the first of 130/143, 4, 1, 2, 3 wins: a run with a failed task exits 1\n" +
			"even if another is incomplete.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFlow(cmd.Context(), g, args[0], rf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rf.resume, "resume", "", "continue the latest unfinished run of this flow (interrupted, crashed, or failed with units left), or --resume=ID that run: only units not done are fetched, with the flow the run recorded")
	f.Lookup("resume").NoOptDefVal = "latest"
	f.BoolVar(&rf.useCurrentFlow, "use-current-flow", false, "with --resume: run the flow file as it is now, not the flow the run recorded when it started")
	f.StringVar(&rf.bbox, "bbox", "", "restrict spatial tasks to minx,miny,maxx,maxy (lon/lat unless --bbox-crs)")
	f.StringVar(&rf.bboxCRS, "bbox-crs", "EPSG:4326", "CRS of --bbox: EPSG:4326 or EPSG:3857")
	f.StringSliceVar(&rf.only, "task", nil, "run only this task (repeatable)")
	f.BoolVar(&rf.withDownstream, "with-downstream", false, "with --task, also run the tasks that depend on it")
	f.DurationVar(&rf.grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight units may take to finish")
	f.BoolVar(&rf.allowMassDelete, "allow-mass-delete", false, "let mirror tasks delete more than their target.max_delete_fraction (default 10%) of a table; with --resume, applies the deletions a run's safety rail stopped")
	f.BoolVar(&rf.distributed, "distributed", false, "hand the run's units to the pool of geoflow worker processes on the same PostgreSQL database (this process plans, follows and finishes the run)")
	f.DurationVar(&rf.storeWait, "store-wait", 0, "how long to wait for the store to come back after a fault (a database down, a full disk) before the run stops, interrupted and resumable, with exit code 4 (default: the flow's store_wait, else 10m)")
	f.StringVar(&rf.memoryLimit, "memory-limit", "", "the process's budget for responses, spools and decoded features in flight (512MiB, 2GiB...): units wait for it instead of the process growing; overrides the flow's memory_limit (default 1GiB)")
	f.StringVar(&rf.progress, "progress", "auto", "progress display: auto (live on a terminal), live, log or off")
	f.StringVar(&rf.cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for benchmarks)")
	_ = f.MarkHidden("cpuprofile")
	return cmd
}

func runFlow(ctx context.Context, g *globals, path string, rf runFlags) error {
	mode := displayMode(g.stderr, rf.progress)
	g, lt := withLiveTerm(g, mode)
	log, err := g.logger()
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(rf.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if rf.storeWait < 0 {
		return fmt.Errorf("--store-wait %s: want a duration above zero, such as 10m", rf.storeWait)
	}
	f, err := g.loadFlow(path, registry())
	if err != nil {
		return err
	}
	area, only, err := flows.Scope{BBox: rf.bbox, BBoxCRS: rf.bboxCRS, Tasks: rf.only, WithDownstream: rf.withDownstream}.Resolve(f)
	if err != nil {
		return err
	}
	memLimit, err := memoryLimit(rf.memoryLimit, f)
	if err != nil {
		return err
	}
	var resumeRun int64
	if rf.resume != "" && rf.resume != "latest" {
		if resumeRun, err = strconv.ParseInt(rf.resume, 10, 64); err != nil || resumeRun < 1 {
			return fmt.Errorf("--resume=%s: want a run id (geoflow runs list shows them), or --resume alone for the latest", rf.resume)
		}
	}
	st, err := openStore(ctx, g, false)
	if err != nil {
		return err
	}
	defer st.Close()

	handler := retry.New(&retry.Options{Logger: log, Shared: sharedPacing(st)})
	progress := &engine.Progress{}
	stopDisplay := startDisplay(lt, mode, progress, log)
	res, err := engine.Run(ctx, f, engine.RunOptions{
		Store:     stores(st),
		HTTP:      handler,
		Logger:    log,
		Area:      area,
		OnlyTasks: only,
		Resume:    rf.resume != "",
		ResumeRun: resumeRun,
		Grace:     rf.grace,
		StoreWait: rf.storeWait,
		Progress:  progress,

		UseCurrentFlow:  rf.useCurrentFlow,
		AllowMassDelete: rf.allowMassDelete,
		Distributed:     rf.distributed,
		MemoryLimit:     memLimit,
	})
	handler.FlushRetrySummaries(ctx)
	stopDisplay()
	var se *SignalError
	errors.As(context.Cause(ctx), &se)
	if err == nil {
		var b strings.Builder
		printSummary(&b, f, res)
		width := 0 // a script reading the summary gets each line whole
		if isTerminal(g.stdout) {
			width = termCols(g.stdout)
		}
		writeWrapped(g.stdout, b.String(), width)
	}
	return runExit(res, err, se, path)
}

// withLiveTerm returns g with its stderr a liveTerm when mode is live, so that logs go
// through the live display, above its progress lines; otherwise g as it is.
func withLiveTerm(g *globals, mode string) (*globals, *liveTerm) {
	if mode != "live" {
		return g, nil
	}
	lt := &liveTerm{w: g.stderr}
	gl := *g
	gl.stderr = lt
	return &gl, lt
}

// runExit is how geoflow run exits after a run that ended in res, or could not be
// carried out (err), stopped by a signal when sig is set: the exit code, and the error
// to print (none for dead letters: the summary said it).
func runExit(res *engine.Result, err error, sig *SignalError, path string) error {
	switch {
	case errors.Is(err, engine.ErrStoreDown):
		return &exitError{code: ExitStoreDown, err: fmt.Errorf("%w; continue it with: geoflow run %s --resume", err, path)}
	case err != nil && sig != nil:
		// Stopped by a signal while its store was down: its end could not be recorded.
		return &exitError{code: sig.ExitCode(), err: fmt.Errorf("interrupted by %s: %w; continue it with: geoflow run %s --resume", sig.Name(), err, path)}
	case err != nil:
		return err
	case res.StoreDown != nil:
		return &exitError{code: ExitStoreDown, err: fmt.Errorf("run %d recorded as interrupted: %w; continue it with: geoflow run %s --resume", res.RunID, res.StoreDown, path)}
	case sig != nil:
		return &exitError{code: sig.ExitCode(), err: fmt.Errorf("interrupted by %s: run %d recorded as interrupted; continue it with: geoflow run %s --resume", sig.Name(), res.RunID, path)}
	case len(res.FailedTasks) > 0:
		var parts []string
		for id, msg := range res.FailedTasks {
			parts = append(parts, fmt.Sprintf("task %q: %s", id, msg))
		}
		return &exitError{code: ExitError, err: fmt.Errorf("run %d failed: %s", res.RunID, strings.Join(parts, "; "))}
	}
	switch code := exitCode(res); code {
	case ExitOK:
		return nil
	case ExitIncomplete:
		return &exitError{code: code, err: fmt.Errorf("run %d is incomplete: %s", res.RunID, incompleteTasks(res))}
	case ExitDeadLetters:
		return &exitError{code: code}
	default:
		return &exitError{code: code, err: fmt.Errorf("run %d ended %s", res.RunID, res.Status)}
	}
}

// startCPUProfile writes a CPU profile of the run into path (--cpuprofile), until stop
// is called; with no path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// exitCode is the exit code of a run that ended (not by a signal): 1 when a task failed
// outright or the run failed otherwise, 2 when it has dead letters and is not merely
// incomplete, 3 when it is incomplete (every dead letter of class incomplete, or a
// task's finish found fewer features stored than its server counted), 0 when done.
func exitCode(res *engine.Result) int {
	switch {
	case len(res.FailedTasks) > 0:
		return ExitError
	case res.Status == store.Incomplete:
		return ExitIncomplete
	case res.DeadLetters() > 0:
		return ExitDeadLetters
	case res.Status != store.Done:
		return ExitError
	}
	return ExitOK
}

// incompleteTasks names a run's incomplete tasks, for its exit message.
func incompleteTasks(res *engine.Result) string {
	var ids []string
	for id, st := range res.TaskStates {
		if st == store.Incomplete {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return fmt.Sprintf("task%s %s stored fewer features than the server counted (geoflow runs show %d; geoflow dlq list --run %d --class incomplete)",
		plural(len(ids)), strings.Join(ids, ", "), res.RunID, res.RunID)
}

// printSummary writes what the run did: its units and features, its tasks' states, and
// what its requests asked of each host, read back from its units (a distributed run's are
// its workers').
func printSummary(w io.Writer, f *flows.Flow, res *engine.Result) {
	s := res.Summary
	if len(res.FlowChanges) > 0 {
		which := "the flow run " + strconv.FormatInt(res.RunID, 10) + " recorded (--use-current-flow to use the file)"
		if res.FlowUsed == "current" {
			which = "the file, as --use-current-flow asked"
		}
		fmt.Fprintf(w, "the flow file changed since run %d started; resumed with %s:\n", res.RunID, which)
		for _, c := range res.FlowChanges {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	// "983 of 1000 units done; 17 dead letters (12 http_5xx, 5 parse): geoflow dlq list --run 42"
	fmt.Fprintf(w, "run %d of %s %s in %s: %s", res.RunID, f.Name, res.Status,
		res.Elapsed.Round(10*time.Millisecond), dlq.Summary(s.UnitsDone, s.UnitsTotal, s.UnitsDead, res.RunID, res.DeadByClass))
	deleted := ""
	if s.Deleted > 0 {
		deleted = fmt.Sprintf(", %d deleted (gone upstream: geoflow changes %d)", s.Deleted, res.RunID)
	}
	if s.Filtered > 0 {
		deleted += fmt.Sprintf(", %d filtered out (returned, left out by transform.where)", s.Filtered)
	}
	fmt.Fprintf(w, "\n  features: %s, %d updated%s; %.1f MB read\n",
		featureFates(s.Inserted, s.Skipped, s.Overlap), s.Updated, deleted, float64(s.Bytes)/1e6)
	if hasSQL(f) {
		fmt.Fprintf(w, "  SQL steps: %d rows affected\n", s.RowsAffected)
	}
	for _, t := range f.Tasks {
		if st, ok := res.TaskStates[t.ID]; ok {
			fmt.Fprintf(w, "  task %-20s %s\n", t.ID, st)
		}
	}
	printHosts(w, s.Hosts, res.Process)
}

// featureFates says what became of the features a run was returned, of those not
// updated: inserted, returned more than once by its own overlapping tiles or pages (of
// skipped, those the run had stored itself), and already present (stored by an earlier
// run).
func featureFates(inserted, skipped, overlap int64) string {
	return fmt.Sprintf("%d inserted, %d returned twice by overlapping tiles, %d already present", inserted, overlap, skipped-overlap)
}

// hasSQL tells whether the flow has a SQL step (type: sql), whose rows affected the
// summary shows.
func hasSQL(f *flows.Flow) bool {
	for _, t := range f.Tasks {
		if t.Type == "sql" {
			return true
		}
	}
	return false
}

// memoryLimit resolves the run's memory budget: --memory-limit, else the flow's
// memory_limit, else the default. Unless GOMEMLIMIT says otherwise, the Go runtime's soft
// limit is set to three quarters of it, so that the collector reclaims what finished
// units left behind before the process grows past the budget: the budget bounds what is
// in flight, the soft limit the garbage, and the last quarter is for what the runtime
// holds besides the heap, the collector's lag behind large allocations and the memory
// SQLite allocates outside the Go heap for a GeoPackage (a 5-million-vertex polygon's
// blob is 80 MB there). At seven eighths, 4 polygons of 4.99 million vertices into a
// GeoPackage peaked at 1,085 MiB of RSS on the default 1 GiB budget.
func memoryLimit(flag string, f *flows.Flow) (int64, error) {
	return processMemory(flag, cmp.Or(f.MemoryLimit, tasks.DefaultMemoryLimit))
}

// processMemory resolves a process's memory budget from its --memory-limit flag, else
// fallback, and sets the Go runtime's soft limit from it (see memoryLimit).
func processMemory(flag string, fallback int64) (int64, error) {
	n := fallback
	if flag != "" {
		v, err := tasks.ParseByteSize(flag)
		if err != nil {
			return 0, fmt.Errorf("--memory-limit: %w", err)
		}
		if err := tasks.CheckMemoryLimit(int64(v)); err != nil {
			return 0, fmt.Errorf("--memory-limit: %w", err)
		}
		n = int64(v)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(n - n/4)
	}
	return n, nil
}
