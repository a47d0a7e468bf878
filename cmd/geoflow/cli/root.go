// Package cli is geoflow's command line: one file per command. Commands parse flags,
// call one function of a package, and print to the writers they are given.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/tasks"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitError       = 1 // bad input, cannot run
	ExitDeadLetters = 2 // finished, but some units ended in the dead-letter queue
	// ExitIncomplete: finished, nothing failed, but some task's harvest cannot be proved
	// complete (the server counted features that are not stored).
	ExitIncomplete = 3
	ExitStoreDown  = 4 // interrupted: the store stayed unavailable past store_wait (resumable)
	// ExitNotSent: geoflow dlq replay failed nothing again, but some units were not sent
	// (their host's circuit breaker stayed open); their dead letters are still open.
	ExitNotSent = 5
)

// Version is set at build time with -ldflags "-X github.com/geoflow/geoflow/cmd/geoflow/cli.Version=...".
var Version = "dev"

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error // printed when non-nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// SignalError is the cancellation cause when SIGINT or SIGTERM arrived.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "received " + e.Name() }

// Name is the signal's name as a user typed it to send it: SIGINT (Ctrl-C), SIGTERM.
func (e *SignalError) Name() string {
	switch e.Signal {
	case os.Interrupt:
		return "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return e.Signal.String()
}

// ExitCode is 128 + the signal number, as shells report it: 130 for SIGINT, 143 for SIGTERM.
func (e *SignalError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// SignalContext returns a context cancelled with a *SignalError cause at the first SIGINT
// or SIGTERM. A second signal exits at once: whatever was in flight rolls back in the
// database, which is safe because units commit atomically.
func SignalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		first := true
		for sig := range ch {
			se := &SignalError{Signal: sig}
			if !first {
				fmt.Fprintf(os.Stderr, "geoflow: second %s: exiting now\n", se.Name())
				os.Exit(se.ExitCode())
			}
			first = false
			cancel(se)
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(ch)
		cancel(nil)
	}
}

// globals are the flags every command shares.
type globals struct {
	database  string
	schema    string
	logFormat string
	logLevel  string
	stdout    io.Writer
	stderr    io.Writer
	// secrets are the values the commands' flows took from the environment into URLs and
	// headers: every log line and the final error message are masked with them.
	secrets *redact.Set
}

func (g *globals) databaseURL() string {
	if g.database != "" {
		return g.database
	}
	return os.Getenv("GEOFLOW_DATABASE_URL")
}

// schemaName is the schema of the bookkeeping tables on PostgreSQL: --schema, else
// GEOFLOW_SCHEMA, else the store's default (geoflow).
func (g *globals) schemaName() string {
	if g.schema != "" {
		return g.schema
	}
	return os.Getenv("GEOFLOW_SCHEMA")
}

func (g *globals) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		if isTerminal(g.stderr) {
			w := g.stderr
			return slog.New(g.secrets.Handler(newConsoleHandler(w, level, func() int { return termCols(w) }))), nil
		}
		opts.ReplaceAttr = textAttr
		return slog.New(g.secrets.Handler(slog.NewTextHandler(g.stderr, opts))), nil
	case "json":
		return slog.New(g.secrets.Handler(slog.NewJSONHandler(g.stderr, opts))), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", g.logFormat)
}

// registry holds every task kind geoflow knows. Kinds are registered here, explicitly.
func registry() *tasks.Registry {
	r := &tasks.Registry{}
	registerKinds(r)
	return r
}

func (g *globals) loadFlow(path string, reg *tasks.Registry) (*flows.Flow, error) {
	return flows.Load(path, g.flowOptions(reg))
}

// flowOptions are the options every command parses flows with.
func (g *globals) flowOptions(reg *tasks.Registry) flows.Options {
	return flows.Options{Registry: reg, Secrets: g.secrets}
}

// newRoot builds the command tree, with the set of secrets the commands' flows add to,
// which every log line and the final error message are masked with.
func newRoot(stdout, stderr io.Writer, secrets *redact.Set) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr, secrets: secrets}
	root := &cobra.Command{
		Use:   "geoflow",
		Short: "Geospatial ETL flows: WFS harvests, tiles and imagery into PostGIS or a GeoPackage",
		Long: "geoflow runs flows written in YAML: small DAGs of WFS harvests, map-tile and imagery fetches that\n" +
			"land in PostGIS or a GeoPackage file, paced by the servers' rate-limit headers, resumable, with a dead-letter queue.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       fmt.Sprintf("%s (%s, %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH),
		// Flags every command shares are checked before any command runs, including
		// those that never log.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			_, err := g.logger()
			return err
		},
	}
	root.SetVersionTemplate("geoflow {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.database, "database", "", "PostgreSQL URL or GeoPackage file (default $GEOFLOW_DATABASE_URL, else ./geoflow.gpkg)")
	pf.StringVar(&g.schema, "schema", "", "PostgreSQL schema of geoflow's own tables, apart from the data (default $GEOFLOW_SCHEMA, else geoflow)")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(
		newRunCmd(g),
		newValidateCmd(g),
		newInspectCmd(g),
		newMigrateCmd(g),
		newVersionCmd(g),
	)
	addMoreCommands(root, g)
	return root
}

// Main runs the CLI with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	secrets := &redact.Set{}
	// Whatever a command prints (a run's summary names its hosts) is masked too.
	stdout, stderr = secrets.Writer(stdout), secrets.Writer(stderr)
	root := newRoot(stdout, stderr, secrets)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printErr(stderr, ee.err, secrets)
		}
		return ee.code
	}
	printErr(stderr, err, secrets)
	return ExitError
}

func printErr(w io.Writer, err error, secrets *redact.Set) {
	var ve *flows.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Fprintln(w, secrets.String(p.String()))
		}
		fmt.Fprintf(w, "geoflow: %d problem%s found\n", len(ve.Problems), plural(len(ve.Problems)))
		return
	}
	msg := secrets.String(err.Error())
	if len(msg) > 0 {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	if !isTerminal(w) {
		fmt.Fprintf(w, "geoflow: %s\n", msg) // whole, for scripts and logs
		return
	}
	for _, l := range errLines(msg, termCols(w)-1) {
		fmt.Fprintln(w, l)
	}
}

// errLines is an error as a terminal shows it: its URLs shortened as a text log shortens
// them, wrapped within width, the further lines indented under the first's message.
func errLines(msg string, width int) []string {
	const head = "geoflow: "
	lines := wrap(shortURLs(msg), max(width-len(head), 20))
	for i := range lines {
		if i == 0 {
			lines[i] = head + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", len(head)) + lines[i]
		}
	}
	return lines
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
