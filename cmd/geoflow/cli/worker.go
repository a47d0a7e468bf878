package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
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
			"workers. Run one or more on each machine, all on one database. A worker needs the environment variables\n" +
			"the flows' ${VAR}s name, as the process that starts the run does.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd.Context(), g, wf) },
	}
	f := cmd.Flags()
	f.StringVar(&wf.id, "id", "", "the worker's name in the pool (default hostname-pid)")
	f.IntVar(&wf.concurrency, "concurrency", 32, "units executed at once")
	f.DurationVar(&wf.grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, how long units in flight may take to finish")
	f.DurationVar(&wf.rescueAfter, "rescue-after", 15*time.Minute,
		"how long a unit may run (then it is stopped and tried again later); a unit still running a little after is taken for lost with its worker and given to another (every worker should agree)")
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
	st, err := postgis.Open(ctx, loc, &postgis.Options{MaxConns: workerConns(wf.concurrency)})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating the database: %w", err)
	}
	host, _ := os.Hostname()
	id := wf.id
	if id == "" {
		id = host + "-" + strconv.Itoa(os.Getpid())
	}
	reg := prometheus.NewRegistry()
	handler := retry.New(&retry.Options{Logger: log, Shared: st, Registerer: reg})
	w := &engine.UnitWorker{Store: stores(st), HTTP: handler, Registry: registry(), Logger: log.With("worker", id),
		Secrets: g.secrets, Backlog: handler.Backlog, SnoozeAfter: wf.snoozeAfter, Memory: tasks.NewMemory(memLimit)}
	registerWorkerMetrics(reg, id, w)
	if wf.listen != "" {
		stop, err := serveWorkerMetrics(wf.listen, reg, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	log.Info("worker started", "worker", id, "concurrency", wf.concurrency, "rescue_after", wf.rescueAfter, "database", st.URL())
	err = st.Work(ctx, store.WorkConfig{ID: id, Hostname: host, Version: Version, Concurrency: wf.concurrency,
		Grace: wf.grace, RescueAfter: wf.rescueAfter, Stats: w.Stats, Logger: log.With("worker", id)}, w.Execute)
	s := w.Stats()
	log.Info("worker stopped", "worker", id, "units_done", s.Done, "units_failed", s.Failed, "snoozed", s.Snoozed)
	return err // nil when asked to stop (SIGINT, SIGTERM) and stopped cleanly
}

// registerWorkerMetrics exposes what the worker did, by the worker's id.
func registerWorkerMetrics(reg *prometheus.Registry, id string, w *engine.UnitWorker) {
	labels := prometheus.Labels{"worker": id}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoflow_worker_units_done_total", Help: "Units this worker executed to done.", ConstLabels: labels},
			func() float64 { return float64(w.Stats().Done) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoflow_worker_units_failed_total", Help: "Units this worker dead-lettered.", ConstLabels: labels},
			func() float64 { return float64(w.Stats().Failed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoflow_worker_units_snoozed_total", Help: "Units this worker gave back to wait (their host's backlog, a previous worker still on them).", ConstLabels: labels},
			func() float64 { return float64(w.Stats().Snoozed) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "geoflow_worker_units_in_flight", Help: "Units this worker is executing.", ConstLabels: labels},
			func() float64 { return float64(w.Stats().InFlight) }),
	)
}

// serveWorkerMetrics serves /metrics and /healthz on addr until stop is called.
func serveWorkerMetrics(addr string, reg *prometheus.Registry, log interface{ Error(string, ...any) }) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving the worker's metrics", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

func newWorkersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "workers", Short: "The pool's workers (PostgreSQL only)"}
	var all bool
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
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKER\tSTATE\tHOST\tPID\tSLOTS\tIN FLIGHT\tDONE\tFAILED\tSNOOZED\tSTARTED\tLAST SEEN")
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s ago\n", w.ID, state, w.Hostname, w.PID, w.Concurrency,
					w.InFlight, w.Done, w.Failed, w.Snoozed, w.StartedAt.Local().Format("2006-01-02 15:04:05"), now.Sub(w.SeenAt).Round(time.Second))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if shown == 0 {
				fmt.Fprintln(g.stderr, "no workers (start one with: geoflow worker); --all shows those that stopped")
			}
			return nil
		},
	}
	list.Flags().BoolVar(&all, "all", false, "also list workers that stopped")
	cmd.AddCommand(list)
	return cmd
}
