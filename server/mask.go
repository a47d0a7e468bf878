package server

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/geoflow/geoflow/internal/redact"
)

// maskAnswers masks the flows' secrets, in each of their forms, in the body of every
// answer but the static assets (geoflow's own files) and the stored features (tiles,
// downloads, a feature's detail: the data as the store holds it, the same in every
// format, which masking would silently alter in some and not others): pages and JSON answers are written
// whole (rendered or encoded into a buffer first), so no secret is split across two
// writes. What the store holds was masked when it was written; this also covers what it
// holds from before a secret was known, and what a page quotes of a flow.
func maskAnswers(secrets *redact.Set, next http.Handler) http.Handler {
	if secrets == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/static/") || strings.HasPrefix(r.URL.Path, "/api/tables/") {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&maskedWriter{ResponseWriter: w, body: secrets.Writer(w)}, r)
	})
}

type maskedWriter struct {
	http.ResponseWriter
	body  io.Writer
	plain bool // decided at the first write: the answer is binary or compressed
	first bool // that write has happened
}

func (m *maskedWriter) Write(p []byte) (int, error) {
	if !m.first {
		m.first = true
		m.plain = !maskable(m.Header())
	}
	if m.plain {
		return m.ResponseWriter.Write(p)
	}
	return m.body.Write(p)
}

// maskable says whether an answer with header h is text a secret could be read in:
// a vector tile, a GeoPackage or an image is data, passed as it is (masking bytes could
// break it), and so is a compressed body, which masking could not read.
func maskable(h http.Header) bool {
	if h.Get("Content-Encoding") != "" {
		return false
	}
	ct := h.Get("Content-Type")
	return ct == "" || strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || strings.Contains(ct, "xml")
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (m *maskedWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// metricsHandlerFor serves reg's metrics with the secrets masked in them (a label may
// name a host that holds one): the exposition is gathered whole, uncompressed, and
// masked before it is sent.
func metricsHandlerFor(reg *prometheus.Registry, secrets *redact.Set) http.Handler {
	if secrets == nil {
		return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	}
	inner := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, DisableCompression: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{header: http.Header{}, code: http.StatusOK}
		inner.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length") // masking changes the length
		w.WriteHeader(rec.code)
		_, _ = secrets.Writer(w).Write(rec.body.Bytes())
	})
}

// recorder keeps an answer to send it later.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
