package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/store"
)

// hostFigures says what a run's requests asked of a host: "412 requests, 2 retries, 13
// answered 429, waited 3.1s; its breaker never opened". pooled says the figures are
// summed over several processes, each with its own breaker.
func hostFigures(h store.HostCount, pooled bool) string {
	opened := "its breaker never opened"
	switch {
	case h.BreakerOpened > 0 && pooled:
		opened = fmt.Sprintf("its breakers opened %d times (summed over the processes)", h.BreakerOpened)
	case h.BreakerOpened > 0:
		opened = fmt.Sprintf("its breaker opened %d times", h.BreakerOpened)
	}
	return fmt.Sprintf("%d requests, %d retries, %d answered 429, waited %s; %s",
		h.Requests, h.Retries, h.RateLimited, waited(h), opened)
}

// waited is the time a host's requests waited, to a tenth of a second.
func waited(h store.HostCount) time.Duration {
	return (time.Duration(h.WaitedMS) * time.Millisecond).Round(100 * time.Millisecond)
}

// printHosts writes a run's figures per host and, when more than one process sent its
// requests (a distributed run: its workers, and the process that planned and checked
// it), per process; self names this process.
func printHosts(w io.Writer, hs store.RunHosts, self string) {
	pooled := len(hs.Workers) > 1
	for _, h := range hs.Hosts {
		fmt.Fprintf(w, "  host %s: %s\n", redact.URL(h.Host), hostFigures(h, pooled))
	}
	if !pooled {
		return
	}
	fmt.Fprintln(w, "  by process:")
	for _, p := range hs.Workers {
		name := p.Worker
		if name == self {
			name += " (this process)"
		}
		for i, h := range p.Hosts {
			if i == 0 {
				fmt.Fprintf(w, "    %s, %d units:\n", name, p.Units)
			}
			fmt.Fprintf(w, "      host %s: %s\n", redact.URL(h.Host), hostFigures(h, false))
		}
		if len(p.Hosts) == 0 {
			fmt.Fprintf(w, "    %s, %d units: no requests\n", name, p.Units)
		}
	}
}

// printHostTables writes a run's hosts for geoflow runs show within width (0: no limit):
// a table of the totals and, when more than one process sent its requests, one row per
// process and host.
func printHostTables(w io.Writer, hs store.RunHosts, width int) error {
	if len(hs.Hosts) == 0 {
		return nil
	}
	cols := []column{{head: "HOST", free: true, min: 16}, {head: "REQUESTS"}, {head: "RETRIES"}, {head: "ANSWERED 429"},
		{head: "WAITED"}, {head: "BREAKER OPENED", drop: 1}}
	fmt.Fprintln(w)
	t := table{cols: cols}
	for _, h := range hs.Hosts {
		t.rows = append(t.rows, hostRow(h))
	}
	if err := t.write(w, width); err != nil || len(hs.Workers) < 2 {
		return err
	}
	fmt.Fprintln(w)
	t = table{cols: append([]column{{head: "PROCESS", free: true, min: 10}, {head: "UNITS"}}, cols...)}
	for _, p := range hs.Workers {
		for _, h := range p.Hosts {
			t.rows = append(t.rows, append([]string{p.Worker, fmt.Sprint(p.Units)}, hostRow(h)...))
		}
		if len(p.Hosts) == 0 {
			t.add(p.Worker, p.Units, "-", 0, 0, 0, "0s", 0)
		}
	}
	if err := t.write(w, width); err != nil {
		return err
	}
	if anyOpened(hs.Hosts) {
		fmt.Fprintln(w, "\nEach process has its own circuit breakers: a host's openings are summed over the processes.")
	}
	return nil
}

func hostRow(h store.HostCount) []string {
	return []string{redact.URL(h.Host), fmt.Sprint(h.Requests), fmt.Sprint(h.Retries), fmt.Sprint(h.RateLimited),
		waited(h).String(), fmt.Sprint(h.BreakerOpened)}
}

func anyOpened(hs []store.HostCount) bool {
	for _, h := range hs {
		if h.BreakerOpened > 0 {
			return true
		}
	}
	return false
}
