package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/server"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
)

type workerFlags struct {
	id          string
	concurrency int
	grace       time.Duration
	rescueAfter time.Duration
	snoozeAfter time.Duration
	listen      string
	memoryLimit string
}

func newWorkerCmd(g *globals) *cobra.Command {
	var wf workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Join the pool that executes the units of distributed runs (PostgreSQL only)",
		Long: "geoflow worker takes units of distributed runs (geoflow run --distributed, or a flow's distributed: true)\n" +
			"from the job queue in the database and executes them, as many at once as --concurrency, until SIGINT or\n" +
			"SIGTERM: then units in flight get --grace to finish, and those still going are handed back to the other\n" +
			"workers. A worker that dies, or is silent for " + store.WorkerSilent.String() + " (it reports every " + store.WorkerReport.String() + "), loses its units to the\n" +
			"others; one that was only paused finds them taken and stops them without writing. Run one or more on\n" +
			"each machine, all on one database. A worker needs the environment variables the flows' ${VAR}s name, as\n" +
			"the process that starts the run does.\n\n" +
			"Every 5 s a worker also looks for distributed runs whose starting process is gone (killed, its machine\n" +
			"lost): one worker adopts each such run, follows it and finishes it as geoflow run --resume would, and\n" +
			"geoflow runs show names it. A worker that stops hands the runs it adopted back to the others.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd.Context(), g, wf) },
	}
	f := cmd.Flags()
	f.StringVar(&wf.id, "id", "", "the worker's name in the pool (default hostname-pid)")
	f.IntVar(&wf.concurrency, "concurrency", 32, "units executed at once")
	f.DurationVar(&wf.grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, how long units in flight may take to finish")
	f.DurationVar(&wf.rescueAfter, "rescue-after", 15*time.Minute,
		"how long a unit may run (then it is stopped and tried again later); one still running a little after is given to another worker: the backstop for a worker that keeps reporting but whose unit never ends, as one that dies or stops reporting loses its units after "+store.WorkerSilent.String()+" (every worker should agree)")
	f.DurationVar(&wf.snoozeAfter, "snooze-after", 2*time.Second,
		"a unit whose host's requests here would wait longer than this goes back to the queue for that long instead of holding a slot")
	f.StringVar(&wf.memoryLimit, "memory-limit", "", "the worker's one budget for the responses, spools and decoded features of all the units it executes (512MiB, 2GiB...): units wait for it instead of the process growing (default 1GiB)")
	f.StringVar(&wf.listen, "listen", "", "serve /metrics and /healthz on this address (e.g. 127.0.0.1:9464); off by default")
	return cmd
}

// workerConns is the worker's connection pool: a connection for each unit writing at once
// (a unit holds one only while its output commits, so half the slots), and River's own
// (its producer, completer, notifier and, on the leader, maintenance).
func workerConns(concurrency int) int32 { return int32(concurrency/2 + 8) }

func runWorker(ctx context.Context, g *globals, wf workerFlags) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	if wf.concurrency < 1 || wf.concurrency > 1000 {
		return fmt.Errorf("--concurrency %d: want 1 to 1000", wf.concurrency)
	}
	if wf.rescueAfter < 10*time.Second {
		return fmt.Errorf("--rescue-after %s: want at least 10s (longer than a unit can take)", wf.rescueAfter)
	}
	memLimit, err := processMemory(wf.memoryLimit, tasks.DefaultMemoryLimit)
	if err != nil {
		return err
	}
	loc, err := queueLocation(g)
	if err != nil {
		return err
	}
	st, err := postgis.Open(ctx, loc, &postgis.Options{MaxConns: workerConns(wf.concurrency), Schema: g.schemaName()})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating the database: %w", err)
	}
	host, _ := os.Hostname()
	id := cmp.Or(wf.id, host+"-"+strconv.Itoa(os.Getpid()))
	return server.Run(ctx, &server.WorkerProcess{Engine: stores(st), Pacing: st, Database: st.URL(), ID: id, Hostname: host, Version: Version,
		Concurrency: wf.concurrency, RescueAfter: wf.rescueAfter, Grace: wf.grace, SnoozeAfter: wf.snoozeAfter, Memory: memLimit,
		Tasks: registry(), Secrets: g.secrets, Listen: wf.listen, Logger: log})
}

func newWorkersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "workers", Short: "The pool's workers (PostgreSQL only)"}
	var all, wide bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the workers that joined the pool: alive, stopped or silent, and what each did",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			q, ok := st.(store.Queue)
			if !ok {
				return store.ErrNoQueue
			}
			ws, err := q.ListWorkers(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			t := table{cols: []column{{head: "WORKER", free: true, min: 8}, {head: "STATE"}, {head: "HOST", free: true, min: 8, drop: 3},
				{head: "PID", drop: 4}, {head: "SLOTS", drop: 2}, {head: "IN FLIGHT"}, {head: "DONE"}, {head: "FAILED"}, {head: "SNOOZED", drop: 5},
				{head: "STARTED", drop: 1}, {head: "LAST SEEN"}}}
			shown := 0
			for _, w := range ws {
				state := "alive"
				switch {
				case w.StoppedAt != nil:
					state = "stopped"
				case !w.Alive(now):
					state = "silent" // died, or cut off from the database
				}
				if state == "stopped" && !all {
					continue
				}
				shown++
				t.add(w.ID, state, w.Hostname, w.PID, w.Concurrency, w.InFlight, w.Done, w.Failed, w.Snoozed,
					w.StartedAt.Local().Format("2006-01-02 15:04:05"), now.Sub(w.SeenAt).Round(time.Second).String()+" ago")
			}
			if err := t.write(g.stdout, outWidth(g.stdout, wide)); err != nil {
				return err
			}
			if shown == 0 {
				fmt.Fprintln(g.stderr, "no workers (start one with: geoflow worker); --all shows those that stopped")
			}
			return nil
		},
	}
	list.Flags().BoolVar(&all, "all", false, "also list workers that stopped")
	list.Flags().BoolVar(&wide, "wide", false, wideUsage)
	cmd.AddCommand(list)
	return cmd
}
