package retry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
)

func TestTransportFailure(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantClass     dlq.Class
		wantTransient bool
	}{
		{name: "connection refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
			wantClass: dlq.ClassNetwork, wantTransient: true},
		{name: "connection reset", err: fmt.Errorf("read: %w", syscall.ECONNRESET),
			wantClass: dlq.ClassNetwork, wantTransient: true},
		{name: "server closed the connection", err: fmt.Errorf("Get: %w", io.EOF),
			wantClass: dlq.ClassNetwork, wantTransient: true},
		{name: "unknown certificate authority", err: x509.UnknownAuthorityError{},
			wantClass: dlq.ClassNetwork},
		{name: "unknown host", err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true},
			wantClass: dlq.ClassNetwork},
		{name: "DNS failure that may pass", err: &net.DNSError{Err: "server misbehaving", Name: "h", IsTemporary: true},
			wantClass: dlq.ClassNetwork, wantTransient: true},
		{name: "transport deadline", err: fmt.Errorf("read: %w", os.ErrDeadlineExceeded),
			wantClass: dlq.ClassTimeout, wantTransient: true},
		{name: "truncated", err: fmt.Errorf("reading: %w", io.ErrUnexpectedEOF),
			wantClass: dlq.ClassTruncated, wantTransient: true},
		{name: "cancellation not the caller's is permanent network", err: fmt.Errorf("Get: %w", context.Canceled),
			wantClass: dlq.ClassNetwork},
		{name: "unknown error is permanent network, not parse", err: errors.New("net/http: malformed HTTP response"),
			wantClass: dlq.ClassNetwork},
		{name: "a sink's fault keeps its class", err: Permanent(dlq.ClassDisk, errors.New("disk full")),
			wantClass: dlq.ClassDisk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := transportFailure(tt.err, nil)
			if o.class != tt.wantClass || o.transient != tt.wantTransient || o.hostFault != tt.wantTransient {
				t.Errorf("transportFailure = class %s transient %v hostFault %v; want %s %v %v",
					o.class, o.transient, o.hostFault, tt.wantClass, tt.wantTransient, tt.wantTransient)
			}
			if o.err != tt.err || o.canceled || o.status != 0 {
				t.Errorf("transportFailure = %+v: want the error kept, not cancelled, no status", o)
			}
		})
	}
	t.Run("message redacted", func(t *testing.T) {
		o := transportFailure(errors.New(`Get "http://h/wfs?x=1": dial s3cr3t-host: refused`), []string{"s3cr3t-host"})
		if want := `Get "http://h/wfs?x=1": dial ` + redact.Mask + `: refused`; o.message != want {
			t.Errorf("message %q, want %q", o.message, want)
		}
	})
}
