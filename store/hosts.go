package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// HostCount is what requests asked of one host and how it went: a unit's execution's, or
// summed over a run's units.
type HostCount struct {
	// Worker names the process that sent the requests (a geoflow worker's id, or the
	// process that ran a local run, as hostname-pid); "" in a run's totals.
	Worker string `json:"worker,omitempty"`
	Host   string `json:"host"` // scheme://host:port
	// Requests are the requests sent, retries included.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// RateLimited counts the answers 429 Too Many Requests.
	RateLimited int64 `json:"rate_limited"`
	// WaitedMS is the time, in milliseconds, the requests were held back by pacing and by
	// the server's Retry-After, and slept before their retries (backoff, an open circuit
	// breaker's cool-down).
	WaitedMS int64 `json:"waited_ms"`
	// BreakerOpened counts the times the host's circuit breaker opened on their answers.
	// Each process has its breakers: summed over processes, a host that went down once
	// opens the breaker of each process that was sending to it.
	BreakerOpened int64 `json:"breaker_opened"`
}

// add accumulates o's figures into c.
func (c *HostCount) add(o HostCount) {
	c.Requests += o.Requests
	c.Retries += o.Retries
	c.RateLimited += o.RateLimited
	c.WaitedMS += o.WaitedMS
	c.BreakerOpened += o.BreakerOpened
}

// Execution is one execution of a unit (or a task's planning and checks): the process
// that executed it and what its requests asked of each host, each HostCount's Worker
// set to that process.
type Execution struct {
	Worker string
	Hosts  []HostCount
}

// HostsJSON is x's hosts as the stores keep them: a JSON array of HostCount, each naming
// its worker, so that a unit executed by two processes in turn keeps both their figures.
func (x Execution) HostsJSON() (string, error) {
	hs := make([]HostCount, len(x.Hosts))
	for i, h := range x.Hosts {
		h.Worker = x.Worker
		hs[i] = h
	}
	b, err := json.Marshal(hs)
	if err != nil {
		return "", fmt.Errorf("encoding the hosts of an execution: %w", err)
	}
	return string(b), nil
}

// WorkerHosts is what one process's requests asked of each host in a run.
type WorkerHosts struct {
	Worker string `json:"worker"`
	// Units are the run's units whose last execution was this process's.
	Units int64       `json:"units"`
	Hosts []HostCount `json:"hosts,omitempty"`
}

// RunHosts is what a run's requests asked of each host: the requests of its units and of
// its tasks' planning and checks, in every session of the run (a resume, a replay),
// whichever process sent them.
type RunHosts struct {
	// Hosts are the run's totals per host, in host order; breaker openings are summed
	// over the processes.
	Hosts []HostCount `json:"hosts,omitempty"`
	// Workers splits them by process, in the order of their names.
	Workers []WorkerHosts `json:"workers,omitempty"`
}

// CollectHosts sums rows (per process and host, as a store groups them) into the run's
// totals per host and its split per process; units counts the units each process
// executed last. No rows and no units make the zero RunHosts.
func CollectHosts(rows []HostCount, units map[string]int64) RunHosts {
	totals := map[string]*HostCount{}
	byWorker := map[string]*WorkerHosts{}
	for _, r := range rows {
		t := totals[r.Host]
		if t == nil {
			t = &HostCount{Host: r.Host}
			totals[r.Host] = t
		}
		t.add(r)
		w := byWorker[r.Worker]
		if w == nil {
			w = &WorkerHosts{Worker: r.Worker}
			byWorker[r.Worker] = w
		}
		r.Worker = "" // the WorkerHosts names it
		w.Hosts = append(w.Hosts, r)
	}
	for name, n := range units {
		if byWorker[name] == nil {
			byWorker[name] = &WorkerHosts{Worker: name}
		}
		byWorker[name].Units = n
	}
	var out RunHosts
	for _, t := range totals {
		out.Hosts = append(out.Hosts, *t)
	}
	for _, w := range byWorker {
		slices.SortFunc(w.Hosts, func(a, b HostCount) int { return cmp.Compare(a.Host, b.Host) })
		out.Workers = append(out.Workers, *w)
	}
	slices.SortFunc(out.Hosts, func(a, b HostCount) int { return cmp.Compare(a.Host, b.Host) })
	slices.SortFunc(out.Workers, func(a, b WorkerHosts) int { return cmp.Compare(a.Worker, b.Worker) })
	return out
}
