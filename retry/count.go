package retry

import (
	"context"
	"sync/atomic"
)

type requestCountKey struct{}

// CountRequests returns a context under which Handler.Do counts every request it sends
// (retries included; a request the circuit breaker holds back is not sent), for
// RequestsSent to read. A unit's executions each take a fresh count.
func CountRequests(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestCountKey{}, new(atomic.Int64))
}

// RequestsSent is the number of requests sent under ctx since CountRequests; 0 when ctx
// does not count. It is safe to call while requests are being sent.
func RequestsSent(ctx context.Context) int64 {
	if n, ok := ctx.Value(requestCountKey{}).(*atomic.Int64); ok {
		return n.Load()
	}
	return 0
}

func countRequest(ctx context.Context) {
	if n, ok := ctx.Value(requestCountKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
