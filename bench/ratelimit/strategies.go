package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/geoflow/geoflow/retry"
)

// strategy fetches one logical request (one unit) and reports success.
type strategy interface {
	fetch(ctx context.Context, url string) error
}

// geoflowStrategy is the retry.Handler with its defaults.
type geoflowStrategy struct{ h *retry.Handler }

func newGeoflow(client *http.Client, seed int64) *geoflowStrategy {
	return &geoflowStrategy{h: retry.New(&retry.Options{Client: client, Seed: seed, Logger: slog.New(slog.DiscardHandler)})}
}

func (g *geoflowStrategy) fetch(ctx context.Context, url string) error {
	return g.h.Do(ctx, retry.Request{
		Unit: url,
		New: func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		},
	}, func(resp *http.Response) error {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	})
}

// naive is a retry loop of the kind found in most clients: it retries 429,
// 5xx and broken bodies up to six attempts, never reads rate-limit headers,
// and waits by one of three rules.
type naive struct {
	client *http.Client
	rule   string // "immediate", "exponential", "full-jitter"
	mu     sync.Mutex
	rnd    *rand.Rand
}

const naiveAttempts = 6

func (n *naive) delay(attempt int) time.Duration {
	d := min(500*time.Millisecond<<attempt, 30*time.Second)
	switch n.rule {
	case "immediate":
		return 0
	case "exponential":
		return d
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return time.Duration(n.rnd.Int64N(int64(d) + 1))
}

func (n *naive) fetch(ctx context.Context, url string) error {
	var last error
	for attempt := range naiveAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(n.delay(attempt - 1)):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := n.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = err
			continue
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 200 && err == nil:
			return nil
		case resp.StatusCode == 200:
			last = err
		case resp.StatusCode == 429 || resp.StatusCode >= 500:
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
		default:
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
	}
	return errors.Join(errors.New("gave up"), last)
}
