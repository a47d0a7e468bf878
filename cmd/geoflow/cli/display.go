package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/geoflow/geoflow/flows/engine"
)

// unwrap is the writer beneath w's wrappers (the secrets' masking writer).
func unwrap(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// startDisplay shows progress until the returned function is called: a live, redrawn
// table on a terminal, or a log line every 10 seconds otherwise.
func startDisplay(w io.Writer, mode string, p *engine.Progress, log *slog.Logger) func() {
	if mode == "auto" {
		mode = "log"
		if f, ok := unwrap(w).(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "live"
		}
	}
	if mode == "off" {
		return func() {}
	}
	every := 10 * time.Second
	if mode == "live" {
		every = 500 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		lines := 0
		for {
			select {
			case <-done:
				if mode == "live" {
					redraw(w, p, lines)
				}
				return
			case <-t.C:
				if mode == "live" {
					lines = redraw(w, p, lines)
					continue
				}
				for _, s := range p.Snapshot() {
					log.Info("progress", "task", s.ID, "units_done", s.Done, "units_total", s.Total, "dead", s.Dead,
						"features", s.Inserted, "skipped", s.Skipped, "eta", eta(s).String())
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// redraw rewrites the previous table in place with ANSI cursor movement.
func redraw(w io.Writer, p *engine.Progress, prev int) int {
	var b strings.Builder
	if prev > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", prev)
	}
	snaps := p.Snapshot()
	for _, s := range snaps {
		el := time.Since(s.Started).Seconds()
		rate := 0.0
		if el > 0 {
			rate = float64(s.Inserted+s.Skipped) / el
		}
		pct := 0.0
		if s.Total > 0 {
			pct = 100 * float64(s.Done+s.Dead) / float64(s.Total)
		}
		fmt.Fprintf(&b, "\x1b[2K%-16s %6d/%-6d units %5.1f%%  %9d features  %8.0f/s  ETA %s", s.ID, s.Done, s.Total, pct, s.Inserted, rate, eta(s))
		if s.Dead > 0 {
			fmt.Fprintf(&b, "  %d dead", s.Dead)
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
	return len(snaps)
}

func eta(s engine.Snapshot) time.Duration {
	finished := s.Done + s.Dead
	if finished == 0 || s.Total <= finished {
		return 0
	}
	per := time.Since(s.Started) / time.Duration(finished)
	return (per * time.Duration(s.Total-finished)).Round(time.Second)
}
