package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Process is what Run runs: a *ServeProcess (geoflow serve), a *UIProcess (geoflow ui)
// or a *WorkerProcess (geoflow worker). Its options say what it serves and runs; Run
// owns its listener, its metrics registry, its readiness and its stop.
type Process interface {
	// lifecycle says where the process listens and how its stop spends the grace.
	lifecycle() lifecycle
	// setup builds the process once its listener is bound, over Run's registry and
	// readiness. ctx ends when the stop begins: what the process starts lives in it.
	setup(ctx context.Context, reg *prometheus.Registry, ready *atomic.Bool) (*parts, error)
}

// lifecycle is what Run needs to know of a process before it is built.
type lifecycle struct {
	kind kind
	// listen is the HTTP address; empty serves no HTTP.
	listen string
	budget stopBudget
	log    *slog.Logger
}

// parts are what a process's setup built, for Run to start and stop.
type parts struct {
	// handler serves on the listener.
	handler http.Handler
	// loop is the process's background work (the scheduler, the worker's queue): it runs
	// until its context ends, then stops within the budget it was built with, and
	// returns. Its ending by itself, or on an error, stops the process too. nil: the
	// process serves HTTP until its context ends.
	loop func(ctx context.Context) error
	// launcher, when set, started runs and replays for the UI: closed when the stop
	// begins, and waited for until the budget's wait after.
	launcher *Launcher
	// listening, when set, reports where HTTP is served, once it is.
	listening func(addr net.Addr)
	// release, when set, is called as Run returns.
	release func()
}

// Run runs p until ctx ends (SIGINT, SIGTERM), its background work ends by itself, or
// serving HTTP fails; then it stops p within its grace. It returns nil after a stop that
// ctx asked for, else what ended the process.
//
// Starting: the listener is bound first (port 0 picks a free port, which p reports), then
// p is built over a new private metrics registry, HTTP is served and the background work
// starts. Stopping, in this order:
//
//  1. Nothing new is accepted: /readyz answers 503 and the launcher refuses new runs and
//     replays (503), while every endpoint still answers.
//  2. The background work stops (the scheduler drains its runs, the worker its units),
//     each within the share of the grace its process's budget gives it (stopBudget).
//  3. The runs and replays the UI started are waited for until the grace, counted from
//     the moment the stop began, has passed; what is still going is logged and left.
//  4. HTTP stops: requests still open get the budget's http time.
//
// The caller's store closes after Run returns.
func Run(ctx context.Context, p Process) error {
	lc := p.lifecycle()
	log := cmp.Or(lc.log, slog.Default())
	ln, err := lc.bind()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var ready atomic.Bool
	ready.Store(true)
	pt, err := p.setup(ctx, prometheus.NewRegistry(), &ready)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	if pt.release != nil {
		defer pt.release()
	}
	stopBegan := refuseOnStop(ctx, &ready, pt.launcher)
	srv, httpFailed := lc.serve(ln, pt.handler, log)
	if ln != nil && pt.listening != nil {
		pt.listening(ln.Addr())
	}
	err = waitForStop(ctx, stop, pt.loop, httpFailed)
	stop(err)
	if pt.launcher != nil {
		waitLaunched(ctx, log, pt.launcher, (<-stopBegan).Add(lc.budget.wait))
	}
	if srv != nil {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lc.budget.http)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}
	return err
}

// bind listens on the lifecycle's address, or returns nil when it has none.
func (lc lifecycle) bind() (net.Listener, error) {
	if lc.listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", lc.listen)
	if err != nil {
		return nil, listenError(lc.kind, lc.listen, err)
	}
	return ln, nil
}

// refuseOnStop makes the process refuse new work once ctx ends (step 1 of Run's stop),
// and sends on the channel it returns when that was.
func refuseOnStop(ctx context.Context, ready *atomic.Bool, launcher *Launcher) <-chan time.Time {
	began := make(chan time.Time, 1)
	context.AfterFunc(ctx, func() {
		ready.Store(false)
		if launcher != nil {
			launcher.Close()
		}
		began <- time.Now()
	})
	return began
}

// serve serves h on ln until it is shut down, or returns a nil server when there is
// no listener. Serving failing is sent on the channel when it stops the process, or only
// logged when it does not (httpFatal).
func (lc lifecycle) serve(ln net.Listener, h http.Handler, log *slog.Logger) (*http.Server, <-chan error) {
	if ln == nil {
		return nil, nil
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	failed := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		switch {
		case httpFatal(lc.kind):
			failed <- err
		case !errors.Is(err, http.ErrServerClosed):
			log.Error("serving the worker's metrics", "err", err)
		}
	}()
	return srv, failed
}

// waitForStop returns once the process is to stop, with the error it stops on: when
// loop returns (by itself, or stopped after ctx ended), or when HTTP fails (then loop is
// stopped first). Without a loop, ctx ending is the stop, with no error.
func waitForStop(ctx context.Context, stop context.CancelCauseFunc, loop func(context.Context) error, httpFailed <-chan error) error {
	loopDone := make(chan error, 1)
	var ctxDone <-chan struct{}
	if loop != nil {
		go func() { loopDone <- loop(ctx) }()
	} else {
		ctxDone = ctx.Done()
	}
	select {
	case err := <-loopDone:
		return err
	case <-ctxDone:
		return nil
	case herr := <-httpFailed:
		err := fmt.Errorf("serving HTTP: %w", herr)
		stop(err)
		if loop != nil {
			<-loopDone
		}
		return err
	}
}

// waitLaunched waits until deadline for the runs and replays launcher started to end (a
// stopping process, whose store closes next); what is still going then is logged and
// left to the exit.
func waitLaunched(ctx context.Context, log *slog.Logger, launcher *Launcher, deadline time.Time) {
	waitCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if err := launcher.Wait(waitCtx); err != nil {
		log.Warn("runs started from the UI did not stop within --grace; exiting without them (geoflow runs list shows what became of them)", "err", err)
	}
}
