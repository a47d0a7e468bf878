package retry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Handler's Prometheus collectors.
type metrics struct {
	requests  *prometheus.CounterVec   // host, code
	retries   *prometheus.CounterVec   // host, reason
	backoff   *prometheus.HistogramVec // host
	headers   *prometheus.CounterVec   // host, form
	pace      *prometheus.GaugeVec     // host
	breaker   *prometheus.GaugeVec     // host
	opened    *prometheus.CounterVec   // host
	budget    *prometheus.GaugeVec     // host
	throttled *prometheus.CounterVec   // host, source
	inflight  *prometheus.GaugeVec     // host
	remaining *prometheus.GaugeVec     // host
	shared    *prometheus.CounterVec   // host
	waited    *prometheus.CounterVec   // host, source
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_http_requests_total",
			Help: "HTTP attempts by host and outcome (status code, or timeout/network/truncated).",
		}, []string{"host", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_http_retries_total",
			Help: "Retries by host and reason (failure class).",
		}, []string{"host", "reason"}),
		backoff: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "geoflow_http_backoff_seconds",
			Help:    "Delay before each retry, server hints included.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"host"}),
		headers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_http_ratelimit_headers_total",
			Help: "Responses carrying rate-limit headers, by form (retry_after, x_ratelimit, ietf, ietf_legacy).",
		}, []string{"host", "form"}),
		pace: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoflow_http_pace_requests_per_second",
			Help: "Current send rate allowed to the host; 0 means unpaced.",
		}, []string{"host"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoflow_http_breaker_state",
			Help: "Circuit breaker state per host: 0 closed, 1 half-open, 2 open.",
		}, []string{"host"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_http_breaker_opened_total",
			Help: "Times the circuit breaker of a host opened.",
		}, []string{"host"}),
		budget: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoflow_http_retry_budget_tokens",
			Help: "Retry budget tokens left per host.",
		}, []string{"host"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoflow_http_throttle_waits_total",
			Help: "Requests held back before sending, by what held them (rate, quota, adaptive, retry_after, shared).",
		}, []string{"host", "source"}),
	}
	m.inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "geoflow_http_concurrency_limit",
		Help: "Requests the host may have in flight: rate_limit.concurrency, or the adaptive limit a slow server's quota needs.",
	}, []string{"host"})
	m.remaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "geoflow_http_quota_remaining",
		Help: "Requests the host's quota has left by geoflow's estimate (the server's last word minus what went since); -1 unknown.",
	}, []string{"host"})
	m.shared = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "geoflow_http_shared_bookings_total",
		Help: "Bookings of send slots in the pacing shared with other processes (one statement to the store each), by host.",
	}, []string{"host"})
	m.waited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "geoflow_http_throttle_wait_seconds_total",
		Help: "Time requests were held back before sending, by host and by what held them (as geoflow_http_throttle_waits_total).",
	}, []string{"host", "source"})
	m.waited = register(reg, m.waited)
	m.shared = register(reg, m.shared)
	m.inflight = register(reg, m.inflight)
	m.remaining = register(reg, m.remaining)
	m.requests = register(reg, m.requests)
	m.retries = register(reg, m.retries)
	m.backoff = register(reg, m.backoff)
	m.headers = register(reg, m.headers)
	m.pace = register(reg, m.pace)
	m.breaker = register(reg, m.breaker)
	m.opened = register(reg, m.opened)
	m.budget = register(reg, m.budget)
	m.throttled = register(reg, m.throttled)
	return m
}

// register adds c to reg; when another Handler registered the same metric
// on reg before, the existing collector is shared instead.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
