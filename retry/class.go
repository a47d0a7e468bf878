package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/geoflow/geoflow/dlq"
)

// classified is an error whose class and retryability were decided by the
// code that made it (Permanent, Transient) or by the Handler.
type classified struct {
	class     dlq.Class
	transient bool
	err       error
}

func (c *classified) Error() string {
	if c.err == nil {
		return string(c.class)
	}
	return c.err.Error()
}

func (c *classified) Unwrap() error { return c.err }

// FailureClass implements dlq.Classed.
func (c *classified) FailureClass() dlq.Class { return c.class }

// Permanent marks err as a failure of the given class that retrying cannot
// fix; a read callback returns it for, say, an OWS ExceptionReport. A nil err
// is allowed and stands for "the class says it all".
func Permanent(class dlq.Class, err error) error {
	return &classified{class: class, err: err}
}

// Transient marks err as a failure of the given class that may succeed if the
// whole unit is fetched again, such as a page whose last bytes are garbage.
func Transient(class dlq.Class, err error) error {
	return &classified{class: class, transient: true, err: err}
}

// Error is what Handler.Do returns when a unit fails. Method, URL, Message and
// Snippet are redacted of credentials before they are stored here.
type Error struct {
	Class    dlq.Class // why it failed
	Status   int       // last HTTP status, 0 if none was received
	Message  string    // what happened, for people
	Snippet  string    // first bytes (up to 512) of the last error response body, redacted
	Attempts int       // attempts made, including the last
	Method   string
	URL      string // redacted
	Err      error  // the underlying error, if any
	// NotSent, set for a unit that was not sent because its host's circuit breaker
	// stayed open for as long as the unit could wait, says why; Class, Status and
	// Message are then those of the host's last real failure. nil for a unit sent.
	NotSent *Unsent
}

// Error formats the failure on one line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("retry: ")
	if e.Method != "" || e.URL != "" {
		fmt.Fprintf(&b, "%s %s: ", e.Method, e.URL)
	}
	b.WriteString(string(e.Class))
	if e.Status != 0 {
		b.WriteString(" ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " after %d attempt", e.Attempts)
		if e.Attempts > 1 {
			b.WriteString("s")
		}
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil && (e.Message == "" || !strings.Contains(e.Message, e.Err.Error())) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error, so errors.Is(err, context.Canceled)
// works on the result of a cancelled Do.
func (e *Error) Unwrap() error { return e.Err }

// FailureDetails implements dlq.Detailed: what a dead letter keeps of the failure.
func (e *Error) FailureDetails() dlq.Details {
	return dlq.Details{Class: e.Class, Status: e.Status, Snippet: e.Snippet, Attempts: e.Attempts, Method: e.Method, URL: e.URL}
}

// ClassOf returns the class of any error: the Class of an *Error or of an
// error made by Permanent or Transient, otherwise the class Do would give it
// coming from a read callback (a sink's class for a dlq.Classed sink fault such
// as a store's, truncated for io.ErrUnexpectedEOF, timeout and network for
// transport errors, canceled for context.Canceled, parse for anything else).
// ClassOf(nil) is "".
func ClassOf(err error) dlq.Class {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	class, _ := classifyErr(err)
	return class
}

// classifyErr decides the class and retryability of an error from a read
// callback or from the transport. The first dlq.Classed error in the chain
// decides when it names a sink (the database, the disk): the handler never
// retries a sink's fault, whoever made it; the caller decides when to try
// again.
func classifyErr(err error) (dlq.Class, bool) {
	var s dlq.Classed
	if errors.As(err, &s) && s.FailureClass().Sink() {
		return s.FailureClass(), false
	}
	var c *classified
	if errors.As(err, &c) {
		return c.class, c.transient
	}
	switch {
	case errors.Is(err, context.Canceled):
		return dlq.ClassCanceled, false
	case errors.Is(err, io.ErrUnexpectedEOF):
		return dlq.ClassTruncated, true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return dlq.ClassTimeout, true
	}
	if class, transient, ok := classifyNet(err); ok {
		return class, transient
	}
	return dlq.ClassParse, false
}

// classifyNet recognises transport failures. Certificate and unknown-host
// errors are permanent: asking again gives the same answer.
func classifyNet(err error) (dlq.Class, bool, bool) {
	var (
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		dnsErr   *net.DNSError
		netErr   net.Error
		opErr    *net.OpError
		errnoErr syscall.Errno
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr), errors.As(err, &invalid):
		return dlq.ClassNetwork, false, true
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return dlq.ClassNetwork, false, true
	case errors.As(err, &netErr) && netErr.Timeout():
		return dlq.ClassTimeout, true, true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return dlq.ClassNetwork, true, true
	case errors.As(err, &opErr), errors.As(err, &dnsErr), errors.As(err, &errnoErr):
		return dlq.ClassNetwork, true, true
	}
	return "", false, false
}

// classifyStatus decides what a non-accepted HTTP status means.
func classifyStatus(code int) (dlq.Class, bool) {
	switch code {
	case 429:
		return dlq.ClassRateLimited, true
	case 408:
		return dlq.ClassTimeout, true
	case 425:
		return dlq.ClassHTTP4xx, true
	case 500, 502, 503, 504:
		return dlq.ClassHTTP5xx, true
	}
	if code >= 500 {
		return dlq.ClassHTTP5xx, false
	}
	// 4xx, and 1xx/3xx that the client did not follow and the caller did
	// not accept: asking again gives the same answer.
	return dlq.ClassHTTP4xx, false
}
