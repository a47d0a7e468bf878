package schedule

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/store"
)

// Metrics are the Prometheus metrics of scheduled runs. A nil *Metrics records nothing.
// It is safe for concurrent use.
type Metrics struct {
	runs        *prometheus.CounterVec   // flow, status
	duration    *prometheus.HistogramVec // flow, status
	units       *prometheus.CounterVec   // flow, state
	features    *prometheus.CounterVec   // flow, result
	deadLetters *prometheus.CounterVec   // flow, class
	inFlight    *prometheus.GaugeVec     // flow
	fires       *prometheus.CounterVec   // flow, outcome
	nextFire    *prometheus.GaugeVec     // flow
	invalid     prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg (required; a private registry
// per process, never the global default).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_runs_total",
			Help: "Runs that ended, by flow and final status (done, incomplete, failed, interrupted).",
		}, []string{"flow", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "geoflow_run_duration_seconds",
			Help:    "How long runs took, by flow and final status.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 18), // 0.5s to about 18h
		}, []string{"flow", "status"}),
		units: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_run_units_total",
			Help: "Units of ended runs, by flow and state: done, or dead (failed for good).",
		}, []string{"flow", "state"}),
		features: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_features_written_total",
			Help: "Features of ended runs, by flow and result: inserted, skipped (already present) or updated.",
		}, []string{"flow", "result"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_dead_letters_total",
			Help: "Dead letters left open by ended runs, by flow and error class.",
		}, []string{"flow", "class"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoflow_runs_in_flight",
			Help: "Scheduled runs going in this process, by flow.",
		}, []string{"flow"}),
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_schedule_fires_total",
			Help: "Scheduled fires seen by this process, by flow and outcome: ran, skipped_overlap, " +
				"claimed_elsewhere, cancelled, failed (the run could not start), error (the database could not be asked).",
		}, []string{"flow", "outcome"}),
		nextFire: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoflow_schedule_next_fire_timestamp_seconds",
			Help: "When each scheduled flow fires next, as a Unix time.",
		}, []string{"flow"}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "geoflow_schedule_invalid_flow_files",
			Help: "Flow files that failed to load at the last reload (their previous version, if any, runs on).",
		}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.duration, m.units, m.features, m.deadLetters,
		m.inFlight, m.fires, m.nextFire, m.invalid} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("scheduler: registering metrics: %w", err)
		}
	}
	return m, nil
}

// flowLoaded makes a flow's series exist at zero, so dashboards and alerts see the flow
// before its first run ends.
func (m *Metrics) flowLoaded(flow string) {
	if m == nil {
		return
	}
	for _, st := range []store.State{store.Done, store.Incomplete, store.Failed, store.Interrupted} {
		m.runs.WithLabelValues(flow, string(st))
	}
	m.inFlight.WithLabelValues(flow)
}

func (m *Metrics) flowRemoved(flow string) {
	if m == nil {
		return
	}
	m.nextFire.DeleteLabelValues(flow)
}

func (m *Metrics) fire(flow, outcome string) {
	if m != nil {
		m.fires.WithLabelValues(flow, outcome).Inc()
	}
}

func (m *Metrics) running(flow string, delta float64) {
	if m != nil {
		m.inFlight.WithLabelValues(flow).Add(delta)
	}
}

func (m *Metrics) next(flow string, unix float64) {
	if m != nil {
		m.nextFire.WithLabelValues(flow).Set(unix)
	}
}

func (m *Metrics) invalidFiles(n int) {
	if m != nil {
		m.invalid.Set(float64(n))
	}
}

// ObserveRun records an ended run.
func (m *Metrics) ObserveRun(flow string, res *engine.Result) {
	if m == nil || res == nil {
		return
	}
	m.runs.WithLabelValues(flow, string(res.Status)).Inc()
	m.duration.WithLabelValues(flow, string(res.Status)).Observe(res.Elapsed.Seconds())
	s := res.Summary
	m.units.WithLabelValues(flow, "done").Add(float64(s.UnitsDone))
	m.units.WithLabelValues(flow, "dead").Add(float64(s.UnitsDead))
	m.features.WithLabelValues(flow, "inserted").Add(float64(s.Inserted))
	m.features.WithLabelValues(flow, "skipped").Add(float64(s.Skipped))
	m.features.WithLabelValues(flow, "updated").Add(float64(s.Updated))
	for class, n := range res.DeadByClass {
		m.deadLetters.WithLabelValues(flow, string(class)).Add(float64(n))
	}
}
