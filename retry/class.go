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
)

// Class names why a unit of work failed. It is stored in the dead-letter
// table, so its values never change.
type Class string

// The classes of failure. ClassCanceled and ClassInvalid are additions to the
// dead-letter vocabulary: the first is the caller's own cancellation (never a
// failure of the host), the second a Request that could not be sent at all.
const (
	ClassHTTP4xx         Class = "http_4xx"
	ClassHTTP5xx         Class = "http_5xx"
	ClassRateLimited     Class = "rate_limited"
	ClassTimeout         Class = "timeout"
	ClassNetwork         Class = "network"
	ClassTruncated       Class = "truncated"
	ClassParse           Class = "parse"
	ClassExceptionReport Class = "exception_report"
	ClassCircuitOpen     Class = "circuit_open"
	ClassDatabase        Class = "database"
	ClassCanceled        Class = "canceled"
	ClassInvalid         Class = "invalid_request"
)

// classified is an error whose class and retryability were decided by the
// code that made it (Permanent, Transient) or by the Handler.
type classified struct {
	class     Class
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

// Permanent marks err as a failure of the given class that retrying cannot
// fix; a read callback returns it for, say, an OWS ExceptionReport. A nil err
// is allowed and stands for "the class says it all".
func Permanent(class Class, err error) error {
	return &classified{class: class, err: err}
}

// Transient marks err as a failure of the given class that may succeed if the
// whole unit is fetched again, such as a page whose last bytes are garbage.
func Transient(class Class, err error) error {
	return &classified{class: class, transient: true, err: err}
}

// Error is what Handler.Do returns when a unit fails. Method, URL, Message and
// Snippet are redacted of credentials before they are stored here.
type Error struct {
	Class    Class  // why it failed
	Status   int    // last HTTP status, 0 if none was received
	Message  string // what happened, for people
	Snippet  string // first bytes (up to 512) of the last error response body, redacted
	Attempts int    // attempts made, including the last
	Method   string
	URL      string // redacted
	Err      error  // the underlying error, if any
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

// ClassOf returns the class of any error: the Class of an *Error or of an
// error made by Permanent or Transient, otherwise the class Do would give it
// coming from a read callback (truncated for io.ErrUnexpectedEOF, timeout
// and network for transport errors, canceled for context.Canceled, parse
// for anything else). ClassOf(nil) is "".
func ClassOf(err error) Class {
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
// callback or from the transport.
func classifyErr(err error) (Class, bool) {
	var c *classified
	if errors.As(err, &c) {
		return c.class, c.transient
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ClassCanceled, false
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ClassTruncated, true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ClassTimeout, true
	}
	if class, transient, ok := classifyNet(err); ok {
		return class, transient
	}
	return ClassParse, false
}

// classifyNet recognises transport failures. Certificate and unknown-host
// errors are permanent: asking again gives the same answer.
func classifyNet(err error) (Class, bool, bool) {
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
		return ClassNetwork, false, true
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return ClassNetwork, false, true
	case errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout, true, true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return ClassNetwork, true, true
	case errors.As(err, &opErr), errors.As(err, &dnsErr), errors.As(err, &errnoErr):
		return ClassNetwork, true, true
	}
	return "", false, false
}

// classifyStatus decides what a non-accepted HTTP status means.
func classifyStatus(code int) (Class, bool) {
	switch code {
	case 429:
		return ClassRateLimited, true
	case 408:
		return ClassTimeout, true
	case 425:
		return ClassHTTP4xx, true
	case 500, 502, 503, 504:
		return ClassHTTP5xx, true
	}
	if code >= 500 {
		return ClassHTTP5xx, false
	}
	// 4xx, and 1xx/3xx that the client did not follow and the caller did
	// not accept: asking again gives the same answer.
	return ClassHTTP4xx, false
}
