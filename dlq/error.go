package dlq

import (
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
)

// Limits on what an entry keeps of a failure, so one pathological response cannot bloat
// the table.
const (
	maxError   = 4096
	maxSnippet = 2048
	maxBody    = 16384
)

// RequestBodyError is implemented by errors that know the body of the request that
// failed, such as a task's error for a WFS GetFeature POST. FromError finds it anywhere in
// the chain and stores the body, redacted.
type RequestBodyError interface {
	error
	RequestBody() string
}

// FromError describes why a unit failed: its class, message, HTTP status, snippet of the
// last response, attempts and request, all redacted of credentials. Only the failure
// fields of the returned Entry are set; the caller fills in where it happened.
//
// The details come from a Detailed error in err's chain when there is one (the rate-limit
// handler gave up); the class from a Classed one otherwise (a task's Permanent error, a
// store's fault), else parse. A server exception report is exception_report rather than
// parse. A nil err gives an entry of class parse saying so, never a panic.
//
// secrets are masked too, wherever they stand as tokens (a flow's values from the
// environment), before any text is cut to length.
func FromError(err error, secrets ...string) Entry {
	if err == nil {
		err = errors.New("unit failed without an error")
	}
	var e Entry
	var d Detailed
	var c Classed
	switch {
	case errors.As(err, &d):
		det := d.FailureDetails()
		e.Class, e.HTTPStatus, e.Snippet, e.Attempts = det.Class, det.Status, det.Snippet, det.Attempts
		e.Request.Method, e.Request.URL = det.Method, det.URL
	case errors.As(err, &c):
		e.Class = c.FailureClass()
	}
	var er *spatial.ExceptionReport
	if (e.Class == ClassParse || e.Class == "") && errors.As(err, &er) {
		e.Class = ClassExceptionReport
	}
	if e.Class == "" {
		e.Class = ClassParse
	}
	var be RequestBodyError
	if errors.As(err, &be) {
		e.Request.Body = be.RequestBody()
	}
	e.Error = err.Error()
	e.Attempts = max(e.Attempts, 1)
	return e.RedactedWith(secrets...)
}

// Redacted returns a copy of e whose request URL, body, error and snippet carry no
// credentials: URL passwords, the values of key, token, apikey, access_token and other
// credential query parameters, and Authorization-style tokens, wherever they appear.
// Secrets found in the request URL are also masked where they are echoed verbatim. Long
// texts are cut to bounded lengths, invalid UTF-8 and NUL bytes (which PostgreSQL text refuses) replaced or dropped. Redacting twice changes nothing.
func (e Entry) Redacted() Entry { return e.RedactedWith() }

// RedactedWith is Redacted that also masks the given secrets wherever they appear as
// tokens of their own: the values a flow took from the environment.
func (e Entry) RedactedWith(extra ...string) Entry {
	secrets := extra
	if u, err := url.Parse(e.Request.URL); err == nil {
		secrets = append(secrets[:len(secrets):len(secrets)], redact.Secrets(u, nil)...)
	}
	if e.Request.URL != "" {
		e.Request.URL = clean(redact.URL(e.Request.URL), secrets, maxBody)
	}
	e.Request.Body = clean(e.Request.Body, secrets, maxBody)
	e.Error = clean(e.Error, secrets, maxError)
	e.Snippet = clean(e.Snippet, secrets, maxSnippet)
	if len(e.History) > 0 {
		h := make([]ReplayItem, len(e.History))
		for i, it := range e.History {
			it.Error = clean(it.Error, secrets, maxError)
			h[i] = it
		}
		e.History = h
	}
	return e
}

// clean redacts s and makes it storable as PostgreSQL text (valid UTF-8, no NUL bytes,
// which a binary response snippet may hold), at most n bytes long.
func clean(s string, secrets []string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	return truncate(redact.String(s, secrets...), n)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " [truncated]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
