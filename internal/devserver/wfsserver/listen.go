package wfsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ListenAndServe serves s on addr (e.g. "127.0.0.1:8080"; port 0 picks one)
// until ctx is cancelled, then shuts down, giving open responses five
// seconds. ready, if not nil, is called with the service URL
// ("http://127.0.0.1:8080/wfs") once the listener is open. It is what
// `geoflow dev wfs --listen` needs; tests should use httptest.NewServer(s).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(serviceURL string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for the sample WFS on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/wfs")
	}
	select {
	case err := <-done:
		return fmt.Errorf("serving the sample WFS on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down the sample WFS: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the sample WFS on %s: %w", ln.Addr(), err)
	}
	return nil
}
