package dlq

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
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

// transportRE matches what the rate-limit handler puts before a failure's own words:
// "retry: GET http://host/path?query: http_5xx 500 after 6 attempts: ", the request, the
// class, the status and the attempts, which a dead letter's other fields hold too.
var transportRE = regexp.MustCompile(`(?s)^(.*?)retry: (?:[A-Z]+ \S*: )?([a-z0-9_]+)(?: (\d{3}))?(?: after (\d+) attempts?)?(?:: |$)`)

// giveUpRE matches the handler's reason for not trying again, which it puts before the
// server's words.
var giveUpRE = regexp.MustCompile(`^(no attempts left \(max_attempts\)|gave up: [^:]*|retry budget of host \S+ exhausted, not retried|[A-Z]+ is not idempotent, not retried): `)

// xmlDeclRE is an XML declaration, the first line of many an error body and no reason.
var xmlDeclRE = regexp.MustCompile(`<\?xml[^>]*\?>(: )?`)

// Reason is a dead letter's error with the server's reason first, for a display that has
// room for one line: the request, class and attempt count the handler puts first
// ("retry: GET http://...: http_5xx 500 after 6 attempts: ") move behind it, an XML
// declaration and a repeated status line are dropped. An HTTP error answer reads
// "HTTP 500 Internal Server Error: ... (after 6 attempts: no attempts left)"; any other
// failure starts with its class ("circuit_open: ...", "parse: ..."). What wraps the handler's error
// (a task's "page 3: ") follows in brackets. An error the handler did not make is
// returned as it is. The stored error stays whole; Reason only shapes what is shown.
func Reason(err string) string {
	m := transportRE.FindStringSubmatchIndex(err)
	if m == nil {
		return strings.TrimSpace(err)
	}
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return err[m[2*i]:m[2*i+1]]
	}
	context, class, status, attempts := strings.TrimSuffix(group(1), ": "), group(2), group(3), group(4)
	msg := xmlDeclRE.ReplaceAllString(err[m[1]:], "")
	var gaveUp string
	if g := giveUpRE.FindStringSubmatch(msg); g != nil {
		gaveUp, msg = g[1], msg[len(g[0]):]
	}
	msg = dedupeParts(msg)
	head := class
	if status >= "400" {
		head = "HTTP " + status
		msg = strings.TrimPrefix(strings.TrimPrefix(msg, "HTTP "), status)
		msg = strings.TrimPrefix(msg, " ")
	}
	out := head
	if msg != "" {
		sep := ": "
		if status >= "400" && !strings.HasPrefix(msg, ":") {
			sep = " "
		}
		out += sep + strings.TrimPrefix(msg, ": ")
	}
	var tail []string
	if attempts != "" {
		n, _ := strconv.ParseInt(attempts, 10, 64)
		tail = append(tail, "after "+attempts+" attempt"+plural(n))
	}
	if gaveUp != "" {
		tail = append(tail, strings.TrimSuffix(gaveUp, " (max_attempts)"))
	}
	if len(tail) > 0 {
		out += " (" + strings.Join(tail, ": ") + ")"
	}
	if context != "" {
		out += " [" + context + "]"
	}
	return out
}

// dedupeParts drops the ": "-separated parts of s that repeat an earlier one, "HTTP "
// aside: a status line the handler's message and its error both carry.
func dedupeParts(s string) string {
	parts := strings.Split(s, ": ")
	seen := map[string]bool{}
	out := parts[:0]
	for _, p := range parts {
		k := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(p), "HTTP "))
		if seen[k] && k != "" {
			continue
		}
		seen[k] = true
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
