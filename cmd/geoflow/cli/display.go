package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

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

// displayMode resolves --progress auto: live on a terminal, log lines otherwise.
func displayMode(w io.Writer, mode string) string {
	if mode != "auto" {
		return mode
	}
	if isTerminal(w) {
		return "live"
	}
	return "log"
}

// startDisplay shows progress until the returned function is called: in live mode, lines
// redrawn in place on lt (which logs write through, above them), fitting the terminal's
// width; in log mode, a log line every 10 seconds.
func startDisplay(lt *liveTerm, mode string, p *engine.Progress, log *slog.Logger) func() {
	if mode == "off" || (mode == "live" && lt == nil) {
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
		for {
			select {
			case <-done:
				if mode == "live" {
					lt.draw(progressLines(p.Snapshot(), time.Now(), termCols(lt)))
					lt.keep()
				}
				return
			case <-t.C:
				if mode == "live" {
					lt.draw(progressLines(p.Snapshot(), time.Now(), termCols(lt)))
					continue
				}
				for _, s := range p.Snapshot() {
					log.Info("progress", "task", s.ID, "units_done", s.Done, "units_total", s.Total, "dead", s.Dead,
						"features", s.Inserted, "skipped", s.Skipped, "eta", eta(s, time.Now()).String())
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// progressLines are the live display's lines, one per task, each within width columns
// (one less, so that no terminal wraps it), task ids aligned.
func progressLines(snaps []engine.Snapshot, now time.Time, width int) []string {
	idw := 0
	for _, s := range snaps {
		idw = max(idw, runeLen(s.ID))
	}
	idw = min(idw, 20)
	lines := make([]string, len(snaps))
	for i, s := range snaps {
		lines[i] = progressLine(s, now, idw, width-1)
	}
	return lines
}

// progressLine is one task's progress within width columns:
//
//	parcels  36/37 units 97%  19495 features  1657/s  ETA 1s  1 dead
//
// The units are those done of those planned so far, as the run's summary counts them
// ("36 of 37 units done"), and the percentage is of those two numbers, rounded down: it
// says 100% only when every planned unit is done; dead units are counted apart. Where the line is too wide, the numbers are shortened
// (19.5k), then the rate, the ETA and the features are left out, then the task's id is
// cut; the dead count goes last.
func progressLine(s engine.Snapshot, now time.Time, idWidth, width int) string {
	units := fmt.Sprintf("%d/%d units", s.Done, s.Total)
	if s.Total > 0 {
		units += fmt.Sprintf(" %d%%", 100*s.Done/s.Total)
	}
	rate := 0.0
	if el := now.Sub(s.Started).Seconds(); el > 0 {
		rate = float64(s.Inserted+s.Skipped) / el
	}
	dead := ""
	if s.Dead > 0 {
		dead = fmt.Sprintf("%d dead", s.Dead)
	}
	etaText := ""
	if d := eta(s, now); d > 0 {
		etaText = "ETA " + d.String()
	}
	compact := fmt.Sprintf("%d/%d %d%%", s.Done, s.Total, 100*s.Done/max(s.Total, 1))
	tries := [][]string{
		{units, fmt.Sprintf("%d features", s.Inserted), fmt.Sprintf("%.0f/s", rate), etaText, dead},
		{units, short(float64(s.Inserted)) + " features", short(rate) + "/s", etaText, dead},
		{units, short(float64(s.Inserted)) + " features", etaText, dead},
		{units, short(float64(s.Inserted)) + " feat", dead},
		{units, dead},
		{compact, dead},
	}
	id := fmt.Sprintf("%-*s", idWidth, cut(s.ID, idWidth))
	for _, parts := range tries {
		if l := joinFields(append([]string{id}, parts...)); runeLen(l) <= width {
			return l
		}
	}
	last := tries[len(tries)-1]
	rest := joinFields(last)
	if room := width - runeLen(rest) - 2; room >= 4 {
		return cut(s.ID, room) + "  " + rest
	}
	return cut(rest, max(width, 1))
}

// joinFields joins the non-empty fields two spaces apart.
func joinFields(fs []string) string {
	var out []string
	for _, f := range fs {
		if f != "" {
			out = append(out, f)
		}
	}
	return strings.Join(out, "  ")
}

// short writes a count for a narrow line: 950, 19.5k, 1.2M.
func short(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0fk", n/1e3)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}

// eta is how long the task's planned units still take at the pace of those finished.
func eta(s engine.Snapshot, now time.Time) time.Duration {
	finished := s.Done + s.Dead
	if finished == 0 || s.Total <= finished {
		return 0
	}
	per := now.Sub(s.Started) / time.Duration(finished)
	return (per * time.Duration(s.Total-finished)).Round(time.Second)
}
