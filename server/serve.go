// Package server is the HTTP side of geoflow serve and geoflow ui, where operators
// look: the web UI (runs, units and dead letters on a map; draw a box to rerun an area),
// its JSON API, Prometheus metrics, and liveness and readiness probes. Run is the one
// lifecycle of geoflow's long-running processes (serve, ui, worker): their listener,
// metrics registry, readiness and ordered stop.
package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
)

// Backend is what the server reads: health, the run history with its units, the
// dead letters and the fires.
type Backend interface {
	store.Health
	store.History
	store.UnitLister
	store.DeadLetters
	store.Changes
	store.Tables
	// RunInfo is what a run recorded when it started (its area, its flow's text).
	RunInfo(ctx context.Context, runID int64) (store.RunInfo, error)
	ListFires(ctx context.Context, flow string, limit int) ([]store.Fire, error)
}

// Options configure Handler.
type Options struct {
	// Store answers /readyz and the run history; required.
	Store Backend
	// Flows lists the scheduled flows for /api/flows; required.
	Flows FlowLister
	// Registry is gathered for /metrics and receives the API's own request metrics;
	// required (a private registry, never the global default).
	Registry *prometheus.Registry
	// Ready, when set, is consulted by /readyz first: false (shutting down) answers 503.
	Ready *atomic.Bool
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NextFires is how many fire times /api/flows lists per flow. Defaults to 3.
	NextFires int
	// Catalog is the flows directory the UI shows; nil shows no flows.
	Catalog *Catalog
	// Launcher starts runs and replays for the UI and POST /api/runs and
	// /api/dlq/replay; nil makes those answer 503 (a server without flows). Once it is
	// closed (Launcher.Close), they answer 503 too, saying the server is shutting down.
	Launcher *Launcher
	// ReadOnly refuses every request that would change the store (runs, replays and
	// discards answer 503, and the pages offer none of them), whatever Launcher is:
	// geoflow ui --read-only. Discarding needs no flows, so a server without a Launcher
	// still discards unless ReadOnly is set.
	ReadOnly bool
	// Token, when set, is required on every request but the probes, signing in and out,
	// the static assets and, with MetricsPublic, /metrics (Authorization: Bearer, or the
	// cookie /login sets). A server that listens beyond loopback must have one (CheckListen); without
	// one, only requests addressed to a loopback host name are answered. Failed sign-ins
	// are logged at WARN and counted, and a client that makes 5 within a minute is
	// answered 429 until the minute has passed (throttle).
	Token string
	// MetricsPublic serves /metrics without the token, to a scraper that cannot send
	// one. Without it, a scraper sends Authorization: Bearer TOKEN (Prometheus's
	// authorization: {credentials: ...}). No effect without a token.
	MetricsPublic bool
	// StoreName says which store the pages show (no credentials), for the header.
	StoreName string
	// Session is how long a sign-in on /login lasts (the cookie's Max-Age and the end
	// its value is signed with). Defaults to 12h.
	Session time.Duration
	// CookieSecure marks the session cookie Secure, so that the browser sends it over
	// HTTPS only: set it when the UI is reached through a TLS proxy (geoflow serves plain
	// HTTP and cannot tell). A request that came over TLS gets a Secure cookie anyway.
	CookieSecure bool
	// Now is the clock of the sessions and of the sign-in throttle. Defaults to time.Now.
	Now func() time.Time
	// Basemap is an XYZ tile URL template of the user's own ({z}, {x}, {y}), drawn beneath
	// the maps of flows that store no tiles of their own; "" draws none (there is no
	// basemap offline). Its origin is added to the pages' content security policy.
	Basemap string
}

// FlowLister lists scheduled flows; *schedule.Scheduler is one.
type FlowLister interface {
	Flows(n int) []schedule.FlowInfo
}

var _ FlowLister = (*schedule.Scheduler)(nil)

type handler struct {
	o      Options
	log    *slog.Logger
	guard  *guard
	assets *assets
	pages  *pages
	tables tableCache
	// csp is the pages' content security policy: contentSecurity, and the origin of the
	// user's basemap.
	csp string
	// exports lets one GeoPackage download be written at a time: each builds a whole
	// file and its R-tree (memory by the feature) before it is sent.
	exports chan struct{}
}

// Handler returns the HTTP handler of geoflow serve:
//
//	GET /metrics          Prometheus metrics of Registry (the token too, unless MetricsPublic)
//	GET /healthz          200 while the process serves
//	GET /readyz           200 when the database answers and its migrations are current
//	GET /api/flows        scheduled flows with their next fire times
//	GET /api/runs         run history, latest first (?flow=, ?status=, ?limit=)
//	GET /api/runs/{id}    one run with its tasks
//	GET /api/fires        scheduled fires and what became of them (?flow=, ?limit=)
//
// and the web UI and the rest of its API (see routes in ui.go).
func Handler(opts Options) (http.Handler, error) {
	if opts.Store == nil || opts.Flows == nil || opts.Registry == nil {
		return nil, errors.New("server: Store, Flows and Registry are required")
	}
	opts.NextFires = cmp.Or(opts.NextFires, 3)
	if opts.ReadOnly {
		opts.Launcher = nil
	}
	h := &handler{o: opts, log: cmp.Or(opts.Logger, slog.Default()), csp: contentSecurity, exports: make(chan struct{}, 1)}
	var err error
	if opts.Basemap != "" {
		origin, err := checkBasemap(opts.Basemap)
		if err != nil {
			return nil, err
		}
		h.csp = strings.NewReplacer("img-src 'self'", "img-src 'self' "+origin, "connect-src 'self'", "connect-src 'self' "+origin).Replace(contentSecurity)
	}
	if h.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if h.pages, err = loadPages(h.assets); err != nil {
		return nil, err
	}
	h.guard, err = newGuard(opts, h.log, func(w http.ResponseWriter, r *http.Request, code int, msg string) {
		writeJSON(w, code, apiError{Error: msg})
	})
	if err != nil {
		return nil, err
	}
	if err := opts.Registry.Register(&deadLetterCollector{st: opts.Store, log: h.log}); err != nil {
		return nil, err
	}
	if err := opts.Registry.Register(&lastRunCollector{st: opts.Store, log: h.log}); err != nil {
		return nil, err
	}
	if q, ok := opts.Store.(store.Queue); ok {
		if err := opts.Registry.Register(&poolCollector{q: q, log: h.log}); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandlerFor(opts.Registry, h.secrets()))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", h.ready)
	mux.HandleFunc("GET /api/flows", h.flows)
	mux.HandleFunc("GET /api/runs", h.runs)
	mux.HandleFunc("GET /api/runs/{id}", h.run)
	mux.HandleFunc("GET /api/fires", h.fires)
	h.routes(mux)

	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "geoflow_api_requests_total",
		Help: "Requests to geoflow serve's HTTP endpoints, by route and status code.",
	}, []string{"route", "code"})
	if err := opts.Registry.Register(requests); err != nil {
		return nil, err
	}
	guarded := h.guard.wrap(maskAnswers(h.secrets(), mux))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		capBody(w, r)
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		guarded.ServeHTTP(rw, r)
		// The mux sets the matched pattern on r; unmatched paths share one label, so a
		// scanner cannot make series without bound.
		requests.WithLabelValues(cmp.Or(r.Pattern, "unmatched"), strconv.Itoa(rw.code)).Inc()
	}), nil
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

type apiError struct {
	Error string `json:"error"`
}

// fail answers err with code; a failure of the server (5xx) is logged too, but not a 503,
// which is this server declining on purpose (read-only, shutting down).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	if code >= 500 && code != http.StatusServiceUnavailable {
		h.log.Error("API request failed", "path", r.URL.Path, "err", err)
	}
	writeJSON(w, code, apiError{Error: err.Error()})
}

func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	if h.o.Ready != nil && !h.o.Ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "shutting down"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	err := h.o.Store.Ping(ctx)
	if err == nil {
		err = h.o.Store.CheckMigrations(ctx)
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (h *handler) flows(w http.ResponseWriter, _ *http.Request) {
	infos := h.o.Flows.Flows(h.o.NextFires)
	for i := range infos {
		infos[i].Problem = h.secrets().String(infos[i].Problem)
	}
	writeJSON(w, http.StatusOK, infos)
}

// secrets are the values flows took from the environment (the catalog's set; nil, which
// masks only credentials by their position, without a catalog).
func (h *handler) secrets() *redact.Set {
	if h.o.Catalog == nil {
		return nil
	}
	return h.o.Catalog.Options.Secrets
}

// masked is err with the flows' secrets masked in its text, for an answer: a flow that
// does not validate, or a run that could not start, may quote a value ${VAR} gave.
func (h *handler) masked(err error) error {
	return &maskedError{msg: h.secrets().String(err.Error()), err: err}
}

// limitParam reads ?limit=, a whole number from 1 to most, with def when absent.
func limitParam(r *http.Request, def, most int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("limit %q: want a whole number from 1 to %d", s, most)
	}
	return n, nil
}

func (h *handler) runs(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 100, 10000)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	q := r.URL.Query()
	runs, err := h.o.Store.ListRuns(r.Context(), store.RunFilter{Flow: q.Get("flow"), Status: q.Get("status"), Limit: limit})
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if runs == nil {
		runs = []store.RunRecord{}
	}
	writeJSON(w, http.StatusOK, runs)
}

func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusBadRequest, errors.New("a run id is a positive whole number"))
		return
	}
	run, err := h.o.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, errors.New("no run "+strconv.FormatInt(id, 10)))
		return
	}
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (h *handler) fires(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 100, 10000)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	fires, err := h.o.Store.ListFires(r.Context(), r.URL.Query().Get("flow"), limit)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if fires == nil {
		fires = []store.Fire{}
	}
	writeJSON(w, http.StatusOK, fires)
}
