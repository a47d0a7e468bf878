package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/internal/redact"
)

// TestMetricsMaskSecrets: a label may name a host that holds a secret (a tenant's token
// as a subdomain): /metrics masks it, in any form, even when the scraper asks for gzip.
func TestMetricsMaskSecrets(t *testing.T) {
	const token = "tk+SECRET9999/x"
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "h"}, []string{"host", "url"})
	reg.MustRegister(c)
	c.WithLabelValues("https://"+redact.Escape(token)+".api.example", "https://h/x?k="+token).Inc()
	var set redact.Set
	set.Add(token)
	srv := httptest.NewServer(metricsHandler(reg, &set))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req) // the raw answer, not decompressed
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || strings.Contains(string(b), "SECRET9999") || strings.Count(string(b), redact.Mask) != 2 {
		t.Errorf("/metrics: %d %s\n%s\nwant the token masked in both labels", resp.StatusCode, resp.Header.Get("Content-Encoding"), b)
	}
	if !strings.Contains(string(b), `requests_total{host="https://REDACTED.api.example"`) {
		t.Errorf("the rest of the label was changed:\n%s", b)
	}
}
