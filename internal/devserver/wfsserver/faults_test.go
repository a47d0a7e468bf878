package wfsserver

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExceptions(t *testing.T) {
	tests := []struct {
		name, flavor, query string
		status              int
		root, code, locator string
	}{
		{"2.0 unknown typename", "", kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:nope"),
			400, "ExceptionReport", "InvalidParameterValue", "typeName"},
		{"1.1 unknown typename", "", kvp("SERVICE", "WFS", "VERSION", "1.1.0", "REQUEST", "GetFeature", "TYPENAME", "nope"),
			400, "ExceptionReport", "InvalidParameterValue", "typeName"},
		{"1.0 unknown typename", "", kvp("SERVICE", "WFS", "VERSION", "1.0.0", "REQUEST", "GetFeature", "TYPENAME", "nope"),
			400, "ServiceExceptionReport", "InvalidParameterValue", "typeName"},
		{"missing request", "", kvp("SERVICE", "WFS"), 400, "ExceptionReport", "MissingParameterValue", "request"},
		{"unknown operation", "", kvp("SERVICE", "WFS", "REQUEST", "Transaction"), 501, "ExceptionReport", "OperationNotSupported", "request"},
		{"bad version", "", kvp("SERVICE", "WFS", "VERSION", "3.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels"),
			400, "ExceptionReport", "InvalidParameterValue", "version"},
		{"bad bbox", "", kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "BBOX", "1,2,3"),
			400, "ExceptionReport", "InvalidParameterValue", "bbox"},
		{"bad srs", "", kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "SRSNAME", "EPSG:3857"),
			400, "ExceptionReport", "InvalidParameterValue", "srsName"},
		{"mapserver answers 200", FlavorMapServer, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "nope"),
			200, "ExceptionReport", "InvalidParameterValue", "typeName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Flavor: tt.flavor})
			r := get(t, ts, tt.query)
			if r.status != tt.status {
				t.Errorf("status %d, want %d", r.status, tt.status)
			}
			root := parseXML(t, r.body)
			if root.XMLName.Local != tt.root {
				t.Fatalf("root %s, want %s", root.XMLName.Local, tt.root)
			}
			var code, loc string
			root.walk(func(n *node) {
				if c := cmpOr(n.attr("exceptionCode"), n.attr("code")); c != "" {
					code, loc = c, n.attr("locator")
				}
			})
			if code != tt.code || loc != tt.locator {
				t.Errorf("code %q locator %q, want %q %q", code, loc, tt.code, tt.locator)
			}
			if s.Stats().Exceptions != 1 {
				t.Errorf("exceptions counted %d", s.Stats().Exceptions)
			}
		})
	}
}

func TestQuota(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	tests := []struct {
		name    string
		quota   Quota
		check   func(t *testing.T, h http.Header)
		refused int
	}{
		{"fixed window x-ratelimit", Quota{Limit: 5, Window: time.Minute, RetryAfter: true}, func(t *testing.T, h http.Header) {
			if h.Get("X-RateLimit-Limit") != "5" || h.Get("X-RateLimit-Remaining") != "0" ||
				h.Get("X-RateLimit-Reset") != strconv.FormatInt(start.Truncate(time.Minute).Add(time.Minute).Unix(), 10) {
				t.Errorf("headers %v", h)
			}
			if h.Get("Retry-After") != "50" {
				t.Errorf("Retry-After %q, want 50", h.Get("Retry-After"))
			}
		}, 3},
		{"retry-after as http-date", Quota{Limit: 5, Window: time.Minute, RetryAfter: true, RetryAfterHTTPDate: true}, func(t *testing.T, h http.Header) {
			if want := "Thu, 01 Jan 2026 12:01:00 GMT"; h.Get("Retry-After") != want {
				t.Errorf("Retry-After %q, want %q", h.Get("Retry-After"), want)
			}
		}, 3},
		{"ietf headers", Quota{Limit: 5, Window: time.Minute, Headers: "ietf"}, func(t *testing.T, h http.Header) {
			if h.Get("RateLimit-Policy") != `"default";q=5;w=60` || h.Get("RateLimit") != `"default";r=0;t=50` {
				t.Errorf("headers %v", h)
			}
			if h.Get("Retry-After") != "" {
				t.Errorf("Retry-After without RetryAfter")
			}
		}, 3},
		{"token bucket", Quota{Limit: 5, Window: 10 * time.Second, TokenBucket: true, RetryAfter: true}, func(t *testing.T, h http.Header) {
			if h.Get("Retry-After") != "2" || h.Get("X-RateLimit-Remaining") != "0" {
				t.Errorf("headers %v", h)
			}
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start
			var mu sync.Mutex
			s, ts := newTestServer(t, Options{Features: 10, Quota: &tt.quota, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
			q := kvp("SERVICE", "WFS", "REQUEST", "GetCapabilities")
			refused := 0
			var last http.Header
			for range 8 {
				r := get(t, ts, q)
				if r.status == http.StatusTooManyRequests {
					refused++
					last = r.header
				}
			}
			if refused != tt.refused || s.Stats().TooManyRequests != int64(tt.refused) {
				t.Fatalf("refused %d, want %d", refused, tt.refused)
			}
			tt.check(t, last)
			mu.Lock()
			now = now.Add(time.Minute)
			mu.Unlock()
			if r := get(t, ts, q); r.status != http.StatusOK {
				t.Errorf("after the window: status %d", r.status)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	q := kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels", "COUNT", "1000")
	tests := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, r response)
		stat   func(Stats) int64
	}{
		{"truncate", Faults{RateTruncate: 1}, func(t *testing.T, r response) {
			if r.status != 200 || !errors.Is(r.err, io.ErrUnexpectedEOF) {
				t.Errorf("status %d err %v, want 200 and unexpected EOF", r.status, r.err)
			}
			if strings.HasSuffix(string(r.body), "</wfs:FeatureCollection>\n") {
				t.Errorf("body complete")
			}
		}, func(s Stats) int64 { return s.FaultsTruncated }},
		{"5xx", Faults{Rate5xx: 1}, func(t *testing.T, r response) {
			if r.status < 500 {
				t.Errorf("status %d", r.status)
			}
		}, func(s Stats) int64 { return s.Faults5xx }},
		{"exception with 200", Faults{RateException200: 1}, func(t *testing.T, r response) {
			if r.status != 200 || parseXML(t, r.body).XMLName.Local != "ExceptionReport" {
				t.Errorf("status %d body %.200s", r.status, r.body)
			}
		}, func(s Stats) int64 { return s.FaultsException200 }},
		{"html with 200", Faults{RateHTML200: 1}, func(t *testing.T, r response) {
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				t.Errorf("status %d type %s", r.status, r.header.Get("Content-Type"))
			}
		}, func(s Stats) int64 { return s.FaultsHTML200 }},
		{"fail forever", Faults{FailForever: func(r *http.Request) bool { return r.URL.Query().Get("COUNT") == "1000" }},
			func(t *testing.T, r response) {
				if r.status != 500 {
					t.Errorf("status %d", r.status)
				}
			}, func(s Stats) int64 { return s.FailedForever }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: 3000, Faults: tt.faults})
			for range 3 {
				tt.check(t, get(t, ts, q))
			}
			if got := tt.stat(s.Stats()); got != 3 || s.Stats().Faults != 3 {
				t.Errorf("fault counted %d (all %d), want 3", got, s.Stats().Faults)
			}
			s.SetFaults(Faults{})
			if p := parsePage(t, get(t, ts, q)); len(p.ids) != 1000 {
				t.Errorf("healed server returned %d", len(p.ids))
			}
		})
	}
}

func TestFaultRates(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 100, Faults: Faults{Rate5xx: 0.1, RateTruncate: 0.1, RateException200: 0.1, RateHTML200: 0.1, Seed: 9}})
	for range 400 {
		get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels"))
	}
	st := s.Stats()
	for name, c := range map[string]int64{"5xx": st.Faults5xx, "truncated": st.FaultsTruncated, "exc200": st.FaultsException200, "html200": st.FaultsHTML200} {
		if c < 20 || c > 65 {
			t.Errorf("%s: %d of 400 at rate 0.1", name, c)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 5000, UnstableOrder: true, Faults: Faults{RateTruncate: 0.2}, Quota: &Quota{Limit: 1000}})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for k := range 10 {
				resp, err := http.Get(ts.URL + "/wfs?" + kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature",
					"TYPENAMES", "gf:parcels", "COUNT", "200", "STARTINDEX", strconv.Itoa((w*10+k)*50)))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.GetFeature != 80 || st.Requests != 80 {
		t.Errorf("stats %+v", st)
	}
}

func FuzzServeHTTP(f *testing.F) {
	f.Add("SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf:parcels&BBOX=48.07,11.47,48.08,11.49&COUNT=3")
	f.Add("request=getfeature&typename=parcels&version=1.0.0&startindex=7&sortby=parcel_id+DESC&outputformat=json")
	f.Add("REQUEST=GetFeature&TYPENAMES=gf:parcels&FILTER=%3CFilter%3E%3CBBOX%3E%3CEnvelope%3E%3ClowerCorner%3E1 2%3C/lowerCorner%3E%3C/Envelope%3E%3C/BBOX%3E%3C/Filter%3E")
	s := New(Options{Features: 50, ImplementsSorting: true, UnstableOrder: true})
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest(http.MethodGet, "/wfs", nil)
		r.URL.RawQuery = q
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code == 0 || w.Body.Len() == 0 {
			t.Fatalf("no answer to %q", q)
		}
	})
}
