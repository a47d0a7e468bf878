package retry

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
)

// Redirects says which redirects a request follows. Whatever it says, a redirect never
// carries a Referer the task did not set itself: Go's client makes one from the
// previous URL, query string (and any key in it) included.
type Redirects string

const (
	// RedirectsSameOrigin (the default) follows redirects within the request's origin
	// (scheme, host and port; http to https on the same host counts as the same), and
	// to another origin only when the request carries no credentials (the task's own
	// headers, the URL's userinfo, key-like parameters: given for that origin only);
	// it refuses the others as a permanent invalid_request failure.
	RedirectsSameOrigin Redirects = "same_origin"
	// RedirectsStripCredentials follows redirects to other origins too, without the
	// task's own headers (only the standard ones geoflow sets: User-Agent, Accept,
	// validators, Range) and without userinfo in the new URL.
	RedirectsStripCredentials Redirects = "strip_credentials"
)

// maxRedirects is how many redirects one attempt follows, as Go's client does.
const maxRedirects = 10

// Validate reports an unknown value.
func (r Redirects) Validate() error {
	switch r {
	case "", RedirectsSameOrigin, RedirectsStripCredentials:
		return nil
	}
	return fmt.Errorf("redirects must be %s or %s, not %q", RedirectsSameOrigin, RedirectsStripCredentials, string(r))
}

type redirectsKey struct{}

// withRedirects returns req carrying the policy its redirects follow.
func withRedirects(req *http.Request, r Redirects) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), redirectsKey{}, r))
}

// safeHeaders are the headers a redirect to another origin keeps: those geoflow sets
// itself, which carry nothing of the task's.
var safeHeaders = map[string]bool{
	"User-Agent": true, "Accept": true, "Accept-Language": true, "Accept-Encoding": true,
	"If-None-Match": true, "If-Modified-Since": true, "Range": true, "Content-Type": true,
}

// checkRedirect is the client's CheckRedirect: req is the next request, via those
// already sent, via[0] the one geoflow built.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	if len(via) >= maxRedirects {
		return Permanent(dlq.ClassHTTP4xx, fmt.Errorf("stopped after %d redirects", maxRedirects))
	}
	if first.Header.Get("Referer") == "" {
		req.Header.Del("Referer")
	}
	if SameOrigin(first.URL, req.URL) {
		return nil
	}
	if !carriesCredentials(first) {
		return nil // nothing of the task's to keep from another origin: a CDN, say
	}
	policy, _ := first.Context().Value(redirectsKey{}).(Redirects)
	if policy != RedirectsStripCredentials {
		return Permanent(dlq.ClassInvalid, fmt.Errorf("redirected from %s to %s, another origin: not followed, so that the task's credentials stay with %s "+
			"(set redirects: strip_credentials to follow such redirects without them)",
			redact.URL(via[len(via)-1].URL.String()), redact.URL(req.URL.String()), hostKey(first.URL)))
	}
	for k := range req.Header {
		if !safeHeaders[textproto.CanonicalMIMEHeaderKey(k)] {
			req.Header.Del(k)
		}
	}
	req.URL.User = nil
	return nil
}

// carriesCredentials tells whether r holds anything of the task's that another origin
// must not see: a header beyond the standard ones geoflow sets (the flow's headers:),
// userinfo, or a key-like query parameter.
func carriesCredentials(r *http.Request) bool {
	for k := range r.Header {
		if !safeHeaders[textproto.CanonicalMIMEHeaderKey(k)] {
			return true
		}
	}
	return r.URL.User != nil || len(redact.Secrets(r.URL, nil)) > 0
}

// SameOrigin tells whether next is within first's origin: the same scheme, host and
// port, or the same host moved from http to https (default ports). Credentials given
// for first may go to next.
func SameOrigin(first, next *url.URL) bool {
	if hostKey(first) == hostKey(next) {
		return true
	}
	return hostKey(first) == "http://"+strings.ToLower(first.Hostname())+":80" &&
		hostKey(next) == "https://"+strings.ToLower(first.Hostname())+":443"
}
