package server

import (
	"errors"
	"testing"
	"time"
)

// TestBudgetFor: each process's stop splits its grace the way its command's help says,
// and no step but HTTP's, which comes after, is given more than the grace.
func TestBudgetFor(t *testing.T) {
	tests := []struct {
		name  string
		kind  kind
		grace time.Duration
		want  stopBudget
	}{
		{name: "serve", kind: serveKind, grace: 30 * time.Second,
			want: stopBudget{drain: 15 * time.Second, units: 12 * time.Second, wait: 30 * time.Second, http: 2 * time.Second}},
		{name: "serve, short grace", kind: serveKind, grace: 4 * time.Second,
			want: stopBudget{drain: 2 * time.Second, units: 1600 * time.Millisecond, wait: 4 * time.Second, http: 2 * time.Second}},
		{name: "ui", kind: uiKind, grace: 30 * time.Second,
			want: stopBudget{units: 24 * time.Second, wait: 30 * time.Second, http: 2 * time.Second}},
		{name: "worker", kind: workerKind, grace: 30 * time.Second,
			want: stopBudget{units: 30 * time.Second, wait: 30 * time.Second, http: 5 * time.Second}},
		// The smallest grace: integer division leaves the steps nothing, not a negative time.
		{name: "serve, 1ns", kind: serveKind, grace: 1,
			want: stopBudget{wait: 1, http: 2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := budgetFor(tt.kind, tt.grace)
			if got != tt.want {
				t.Errorf("budgetFor(%v) = %+v, want %+v", tt.grace, got, tt.want)
			}
			if got.drain+got.units > tt.grace || got.wait != tt.grace {
				t.Errorf("budgetFor(%v) = %+v spends more than the grace, or waits other than all of it", tt.grace, got)
			}
		})
	}
}

func TestHTTPFatalAndListenError(t *testing.T) {
	errTaken := errors.New("listen tcp 127.0.0.1:9464: bind: address already in use")
	tests := []struct {
		name      string
		kind      kind
		wantFatal bool
		wantErr   string
	}{
		{name: "serve", kind: serveKind, wantFatal: true, wantErr: "--listen: " + errTaken.Error()},
		{name: "ui", kind: uiKind, wantFatal: true, wantErr: "--listen: " + errTaken.Error()},
		{name: "worker", kind: workerKind, wantFatal: false, wantErr: "--listen 127.0.0.1:9464: " + errTaken.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := httpFatal(tt.kind); got != tt.wantFatal {
				t.Errorf("httpFatal = %v, want %v", got, tt.wantFatal)
			}
			err := listenError(tt.kind, "127.0.0.1:9464", errTaken)
			if err.Error() != tt.wantErr || !errors.Is(err, errTaken) {
				t.Errorf("listenError = %q, want %q wrapping the cause", err, tt.wantErr)
			}
		})
	}
}
