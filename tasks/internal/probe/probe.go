// Package probe asks a service for its description (a capabilities document, a landing
// page, a tile) on behalf of geoflow inspect and validate --online, through the task's
// HTTP handler, and picks out the quota headers the server sent.
package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
)

// MaxBody bounds a description read into memory: capabilities documents of large WMTS
// run to tens of MiB.
const MaxBody = 64 << 20

// Response is a server's answer to a probe.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Get fetches u through env's HTTP handler, with accept as the Accept header (none when
// "") and headers (a task's configured headers), and returns the answer: a 2xx, or a
// 400, 401, 403, 404, 405 or 406, which tell what the server is not rather than that it
// failed. Other failures (unreachable, 5xx after retries) are the error.
func Get(ctx context.Context, env *tasks.Env, unit, u, accept string, headers map[string]string) (*Response, error) {
	var out Response
	req := retry.Request{
		Unit: env.TaskID + "/" + unit, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects,
		AcceptStatus: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
			http.StatusMethodNotAllowed, http.StatusNotAcceptable},
		New: func(ctx context.Context) (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return nil, err
			}
			for k, v := range headers {
				r.Header.Set(k, v)
			}
			if accept != "" {
				r.Header.Set("Accept", accept)
			}
			r.Header.Set("User-Agent", "geoflow")
			return r, nil
		},
	}
	err := env.HTTP.Do(ctx, req, func(resp *http.Response) error {
		b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
		if err != nil {
			return err
		}
		if len(b) > MaxBody {
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("an answer larger than %d MiB", MaxBody>>20))
		}
		out = Response{Status: resp.StatusCode, Header: resp.Header.Clone(), Body: b}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// OK tells a 2xx answer.
func (r *Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// RateLimit picks the quota headers out of h (Retry-After, X-RateLimit-*, RateLimit,
// RateLimit-Policy and the older RateLimit-Limit/-Remaining/-Reset), sorted by name, as
// tasks.Service.RateLimit lists them; nil when there are none.
func RateLimit(h http.Header) []tasks.Header {
	var out []tasks.Header
	for name, vs := range h {
		l := strings.ToLower(name)
		if l == "retry-after" || strings.HasPrefix(l, "x-ratelimit") || strings.HasPrefix(l, "x-rate-limit") ||
			l == "ratelimit" || strings.HasPrefix(l, "ratelimit-") {
			out = append(out, tasks.Header{Name: name, Value: strings.Join(vs, ", ")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NotThisKind is an error wrapping tasks.ErrNotThisKind that says why.
func NotThisKind(format string, args ...any) error {
	return fmt.Errorf("%w: %s", tasks.ErrNotThisKind, fmt.Sprintf(format, args...))
}
