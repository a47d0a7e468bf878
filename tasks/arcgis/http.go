package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/esrijson"
	"github.com/geoflow/geoflow/tasks"
)

// request is a GET (form in the query) or a POST (form in the body) of u. A query is a
// read, so a POST is retried like a GET. The token goes in X-Esri-Authorization, which the
// handler redacts like every credential header.
func (t *Task) request(env *tasks.Env, unit, method, u string, form url.Values) retry.Request {
	return retry.Request{
		Unit: unit, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects, Idempotent: true,
		New: func(ctx context.Context) (*http.Request, error) {
			var req *http.Request
			var err error
			if method == http.MethodGet {
				target := u
				if len(form) > 0 {
					sep := "?"
					if strings.Contains(u, "?") {
						sep = "&"
					}
					target += sep + form.Encode()
				}
				req, err = http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			} else {
				req, err = http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
				if err == nil {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
			}
			if err != nil {
				return nil, err
			}
			for k, v := range t.cfg.Headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("User-Agent", "geoflow")
			if t.token != "" {
				req.Header.Set("X-Esri-Authorization", "Bearer "+t.token)
			}
			return req, nil
		},
	}
}

// serviceError classifies an {"error":{...}} body, which ArcGIS answers with HTTP 200.
func serviceError(body []byte) error {
	trimmed := strings.TrimSpace(string(body[:min(len(body), 64)]))
	if !strings.HasPrefix(trimmed, "{") || !strings.Contains(trimmed, `"error"`) {
		return nil
	}
	// Only the presence of the error object is trusted; its members are read leniently:
	// an error answer must never be taken for an empty result.
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 || string(e.Error) == "null" {
		return nil
	}
	var v any
	_ = json.Unmarshal(e.Error, &v)
	se := esrijson.ServiceErrorOf(v)
	return classify(se)
}

// classify marks an error reading an answer for the retry handler. The error codes of
// ArcGIS bodies decide: 498 (invalid or expired token) and 499 (token required) cannot
// succeed by asking again, nor can 400, 403 or 404; 500 and the like are the server's own
// failures, retried.
func classify(err error) error {
	var se *esrijson.ServiceError
	var nf *spatial.NotFeaturesError
	switch {
	case errors.As(err, &se):
		switch {
		case se.Code == 429:
			return retry.Transient(dlq.ClassRateLimited, se)
		case se.Code == 498 || se.Code == 499:
			return retry.Permanent(dlq.ClassHTTP4xx, fmt.Errorf("the server refused the token (set token_env to a valid token): %w", se))
		case se.Code >= 500 || se.Code == 0:
			return retry.Transient(dlq.ClassHTTP5xx, se)
		}
		return retry.Permanent(dlq.ClassHTTP4xx, se)
	case errors.Is(err, spatial.ErrTooLarge):
		return retry.Permanent(dlq.ClassTooLarge, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return retry.Transient(dlq.ClassTruncated, err)
	case errors.As(err, &nf) && nf.Kind == "html":
		return retry.Transient(dlq.ClassParse, fmt.Errorf("the server answered an HTML page instead of features: %w", err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return retry.Permanent(dlq.ClassParse, err)
}
