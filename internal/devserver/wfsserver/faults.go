package wfsserver

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// writeException answers an OGC exception report in the format of version:
// ows:ExceptionReport (OWS 1.1 for WFS 2.0, OWS 1.0 for WFS 1.1) or a WFS 1.0
// ServiceExceptionReport. When flavorStatus is set the flavor may override
// the HTTP status (MapServer answers 200).
func (s *Server) writeException(w http.ResponseWriter, version string, e *owsError, flavorStatus bool) {
	status := e.status
	if flavorStatus && s.fl.exceptions200 {
		status = http.StatusOK
	}
	b := make([]byte, 0, 512)
	b = append(b, xmlHeader...)
	loc := func(b []byte) []byte {
		if e.locator == "" {
			return b
		}
		b = append(b, ` locator="`...)
		b = appendEscaped(b, e.locator)
		return append(b, '"')
	}
	switch version {
	case "1.0.0":
		w.Header().Set("Content-Type", "text/xml; charset=UTF-8")
		b = append(b, `<ServiceExceptionReport version="1.2.0" xmlns="http://www.opengis.net/ogc" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.opengis.net/ogc http://schemas.opengis.net/wfs/1.0.0/OGC-exception.xsd">`...)
		b = append(b, "\n<ServiceException code=\""...)
		b = append(b, e.code...)
		b = append(loc(append(b, '"')), '>')
		b = appendEscaped(b, e.text)
		b = append(b, "</ServiceException>\n</ServiceExceptionReport>\n"...)
	default:
		ows, ver, xsd := "http://www.opengis.net/ows/1.1", "2.0.0", "http://schemas.opengis.net/ows/1.1.0/owsAll.xsd"
		if version == "1.1.0" {
			ows, ver, xsd = "http://www.opengis.net/ows", "1.0.0", "http://schemas.opengis.net/ows/1.0.0/owsExceptionReport.xsd"
		}
		w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
		b = append(b, `<ows:ExceptionReport xmlns:ows="`...)
		b = append(b, ows...)
		b = append(b, `" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="`...)
		b = append(b, ver...)
		b = append(b, `" xsi:schemaLocation="`...)
		b = append(b, ows+" "+xsd...)
		b = append(b, "\">\n<ows:Exception exceptionCode=\""...)
		b = append(b, e.code...)
		b = append(loc(append(b, '"')), '>')
		b = append(b, "<ows:ExceptionText>"...)
		b = appendEscaped(b, e.text)
		b = append(b, "</ows:ExceptionText></ows:Exception>\n</ows:ExceptionReport>\n"...)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

type faultKind int

const (
	faultNone faultKind = iota
	fault5xx
	faultTruncate
	faultException200
	faultHTML200
)

type faultState struct {
	mu          sync.Mutex
	rng         *rand.Rand
	f           Faults
	failForever func(*http.Request) bool
}

func newFaultState(f Faults) *faultState {
	return &faultState{rng: rand.New(rand.NewPCG(uint64(f.Seed), 0x7761_7466)), f: f, failForever: f.FailForever}
}

// draw decides one request's fault, plus a second uniform number for the
// fault's details (which 5xx, where to truncate).
func (fs *faultState) draw() (faultKind, float64) {
	f := fs.f
	if f.Rate5xx+f.RateTruncate+f.RateException200+f.RateHTML200 <= 0 {
		return faultNone, 0
	}
	fs.mu.Lock()
	u, v := fs.rng.Float64(), fs.rng.Float64()
	fs.mu.Unlock()
	for _, c := range []struct {
		p float64
		k faultKind
	}{{f.Rate5xx, fault5xx}, {f.RateTruncate, faultTruncate}, {f.RateException200, faultException200}, {f.RateHTML200, faultHTML200}} {
		if u < c.p {
			return c.k, v
		}
		u -= c.p
	}
	return faultNone, v
}

// proxyPage is what nginx in front of a Tomcat says when the backend is down.
func proxyPage(status int) string {
	t := strconv.Itoa(status) + " " + http.StatusText(status)
	return "<html>\r\n<head><title>" + t + "</title></head>\r\n<body>\r\n<center><h1>" + t +
		"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
}

// serveFault answers a non-truncating fault. It reports false for faultNone
// and faultTruncate, which the GetFeature writer handles.
func (s *Server) serveFault(w http.ResponseWriter, version string, k faultKind, v float64) bool {
	switch k {
	case fault5xx:
		s.f5xx.Add(1)
		switch {
		case v < 1.0/3:
			s.writeException(w, version, &owsError{status: http.StatusInternalServerError, code: "NoApplicableCode",
				text: "java.io.IOException: Error occurred reading features: org.postgresql.util.PSQLException: An I/O error occurred while sending to the backend."}, false)
		case v < 2.0/3:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(proxyPage(http.StatusBadGateway)))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(proxyPage(http.StatusServiceUnavailable)))
		}
	case faultException200:
		s.fExc.Add(1)
		s.writeException(w, version, &owsError{status: http.StatusOK, code: "NoApplicableCode",
			text: "Error occurred getting features: java.lang.OutOfMemoryError: GC overhead limit exceeded"}, false)
	case faultHTML200:
		s.fHTML.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("<!DOCTYPE html>\n<html><head><title>Service temporarily unavailable</title></head>\n" +
			"<body><h1>Wartungsarbeiten</h1><p>The service is down for maintenance &amp; will be back shortly.</p></body></html>\n"))
	default:
		return false
	}
	s.faultsAll.Add(1)
	return true
}

// quotaState enforces Quota.
type quotaState struct {
	q      Quota
	mu     sync.Mutex
	window int64 // fixed windows: index of the current window
	used   int
	tokens float64 // token bucket
	last   time.Time
}

func newQuotaState(q Quota) *quotaState {
	if q.Window <= 0 {
		q.Window = time.Minute
	}
	return &quotaState{q: q, tokens: float64(q.Limit)}
}

// admit spends one request from the quota and sets the rate-limit headers;
// false means answer 429.
func (qs *quotaState) admit(h http.Header, now time.Time) bool {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	var ok bool
	var remaining int
	var reset time.Time     // when the quota is whole again
	var retry time.Duration // when a request would next be admitted
	if qs.q.TokenBucket {
		rate := float64(qs.q.Limit) / qs.q.Window.Seconds() // tokens per second
		if !qs.last.IsZero() {
			qs.tokens = math.Min(float64(qs.q.Limit), qs.tokens+now.Sub(qs.last).Seconds()*rate)
		}
		qs.last = now
		if ok = qs.tokens >= 1; ok {
			qs.tokens--
		}
		remaining = int(qs.tokens)
		reset = now.Add(time.Duration((float64(qs.q.Limit) - qs.tokens) / rate * float64(time.Second)))
		retry = time.Duration(math.Max(0, 1-qs.tokens) / rate * float64(time.Second))
	} else {
		win := now.UnixNano() / int64(qs.q.Window)
		if win != qs.window {
			qs.window, qs.used = win, 0
		}
		if ok = qs.used < qs.q.Limit; ok {
			qs.used++
		}
		remaining = qs.q.Limit - qs.used
		reset = time.Unix(0, (win+1)*int64(qs.q.Window))
		retry = reset.Sub(now)
	}
	secs := func(d time.Duration) string { return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) }
	switch qs.q.Headers {
	case "none":
	case "ietf":
		h.Set("RateLimit-Policy", `"default";q=`+strconv.Itoa(qs.q.Limit)+";w="+secs(qs.q.Window))
		h.Set("RateLimit", `"default";r=`+strconv.Itoa(remaining)+";t="+secs(reset.Sub(now)))
	default:
		h.Set("X-RateLimit-Limit", strconv.Itoa(qs.q.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(reset.UnixNano())/1e9)), 10))
	}
	if !ok && qs.q.RetryAfter {
		retry = max(retry, time.Second)
		if qs.q.RetryAfterHTTPDate {
			h.Set("Retry-After", now.Add(retry+time.Second-1).Truncate(time.Second).UTC().Format(http.TimeFormat))
		} else {
			h.Set("Retry-After", secs(retry))
		}
	}
	return ok
}

// QuotaLimiter enforces a Quota on another sample server (the ArcGIS layer uses it), with
// the same headers and Retry-After as the WFS. It is safe for concurrent use.
type QuotaLimiter struct{ qs *quotaState }

// NewQuotaLimiter returns a limiter for q.
func NewQuotaLimiter(q Quota) *QuotaLimiter { return &QuotaLimiter{qs: newQuotaState(q)} }

// Admit spends one request at now and sets the rate-limit headers on h; false means the
// request must be answered 429.
func (l *QuotaLimiter) Admit(h http.Header, now time.Time) bool { return l.qs.admit(h, now) }

// Outage is a Faults.FailForever hook for a host that goes down for a while: the first
// after GetFeature requests for features (counts spared) are served, then every one is
// answered 500 for the duration d from the first that failed, then the host is back.
// now tells the time (time.Now when nil). It is safe for concurrent use.
func Outage(after int, d time.Duration, now func() time.Time) func(*http.Request) bool {
	if now == nil {
		now = time.Now
	}
	var mu sync.Mutex
	var seen int
	var began time.Time
	return func(r *http.Request) bool {
		if !featureRequest(r) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen <= after {
			return false
		}
		t := now()
		if began.IsZero() {
			began = t
		}
		return t.Sub(began) < d
	}
}

// featureRequest tells whether r asks for features: a WFS GetFeature for results (not
// hits) or an OGC API - Features items page (limit=1 is a count).
func featureRequest(r *http.Request) bool {
	q := r.URL.Query()
	get := func(k string) string {
		for key, v := range q {
			if strings.EqualFold(key, k) && len(v) > 0 {
				return v[0]
			}
		}
		return ""
	}
	if strings.HasSuffix(r.URL.Path, "/items") {
		return get("limit") != "1"
	}
	return strings.EqualFold(get("REQUEST"), "GetFeature") && !strings.EqualFold(get("RESULTTYPE"), "hits")
}
