package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

var deadLettersDesc = prometheus.NewDesc("geoflow_dead_letters_open",
	"Open dead letters in the store, by failure class and task (read from the store at each scrape).",
	[]string{"class", "task"}, nil)

// deadLetterCollector reads the open dead letters from the store at each scrape: they
// are the store's, not this process's (a CLI run or another instance adds them too).
type deadLetterCollector struct {
	st  store.DeadLetters
	log *slog.Logger
}

func (c *deadLetterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deadLettersDesc }

func (c *deadLetterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rows, err := c.st.DeadLetterStats(ctx, dlq.Filter{Status: dlq.StatusOpen})
	if err != nil {
		// The rest of /metrics still answers: a store that is down shows on /readyz.
		c.log.Warn("counting dead letters for /metrics", "err", err)
		return
	}
	type key struct{ class, task string }
	n := map[key]int64{}
	for _, r := range rows {
		n[key{string(r.Class), r.Task}] += r.N
	}
	for k, v := range n {
		ch <- prometheus.MustNewConstMetric(deadLettersDesc, prometheus.GaugeValue, float64(v), k.class, k.task)
	}
}
