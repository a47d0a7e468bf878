package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// orderProcess is a process whose background loop holds its stop until release is
// closed, and whose handler answers /readyz from Run's readiness.
type orderProcess struct {
	addr     chan string
	stopping chan struct{} // closed when the loop is told to stop
	release  chan struct{} // closing it lets the loop return
	loopErr  error
}

func newOrderProcess() *orderProcess {
	return &orderProcess{addr: make(chan string, 1), stopping: make(chan struct{}), release: make(chan struct{})}
}

func (p *orderProcess) lifecycle() lifecycle {
	return lifecycle{kind: serveKind, listen: "127.0.0.1:0", budget: stopBudget{wait: time.Second, http: time.Second}}
}

func (p *orderProcess) setup(_ context.Context, reg *prometheus.Registry, ready *atomic.Bool) (*parts, error) {
	if reg == nil {
		return nil, errors.New("no registry")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	return &parts{
		handler: mux,
		loop: func(ctx context.Context) error {
			<-ctx.Done()
			close(p.stopping)
			<-p.release
			return p.loopErr
		},
		listening: func(addr net.Addr) { p.addr <- addr.String() },
	}, nil
}

func readyz(addr string) (int, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestRunStopOrder: Run reports the port :0 picked; on the stop, /readyz turns 503 while
// the background loop is still stopping and HTTP still answers; HTTP closes only once
// the loop has returned; a stop ctx asked for returns nil.
func TestRunStopOrder(t *testing.T) {
	p := newOrderProcess()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p) }()
	var addr string
	select {
	case addr = <-p.addr:
	case err := <-done:
		t.Fatalf("Run returned at start: %v", err)
	}
	if _, port, _ := net.SplitHostPort(addr); port == "0" || port == "" {
		t.Fatalf("Run reported %q, not the port it bound", addr)
	}
	if code, err := readyz(addr); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz before the stop: %d %v", code, err)
	}

	cancel()
	<-p.stopping
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, err := readyz(addr)
		if err != nil {
			t.Fatalf("HTTP stopped answering before the loop stopped: %v", err)
		}
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d while stopping", code)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned before its loop stopped: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(p.release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after a stop ctx asked for: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return once its loop stopped")
	}
	if _, err := readyz(addr); err == nil {
		t.Error("HTTP still answers after Run returned")
	}
}

// TestRunLoopEnds: a background loop that ends by itself ends Run with its error, without
// ctx ending.
func TestRunLoopEnds(t *testing.T) {
	p := &loopEnds{newOrderProcess()}
	p.loopErr = errors.New("reading the flows: gone")
	if err := Run(context.Background(), p); !errors.Is(err, p.loopErr) {
		t.Errorf("Run = %v, want the loop's error", err)
	}
}

// loopEnds is orderProcess with a loop that returns at once.
type loopEnds struct{ *orderProcess }

func (p *loopEnds) setup(ctx context.Context, reg *prometheus.Registry, ready *atomic.Bool) (*parts, error) {
	pt, err := p.orderProcess.setup(ctx, reg, ready)
	if err != nil {
		return nil, err
	}
	pt.loop = func(context.Context) error { return p.loopErr }
	return pt, nil
}

// TestRunListenTaken: an address already in use fails Run before the process is built,
// in the command's words.
func TestRunListenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &takenProcess{addr: ln.Addr().String()}
	err = Run(context.Background(), p)
	if err == nil || err.Error()[:10] != "--listen: " || p.built {
		t.Errorf("Run on a taken address: %v (built %v), want a --listen error before setup", err, p.built)
	}
}

type takenProcess struct {
	addr  string
	built bool
}

func (p *takenProcess) lifecycle() lifecycle { return lifecycle{kind: uiKind, listen: p.addr} }

func (p *takenProcess) setup(context.Context, *prometheus.Registry, *atomic.Bool) (*parts, error) {
	p.built = true
	return &parts{}, nil
}
