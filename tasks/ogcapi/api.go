package ogcapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

// Conformance classes the task looks for.
const (
	confCRS       = "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"
	confFilter    = "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter"
	confCQL2Text  = "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text"
	crs84URI      = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
	relQueryables = "http://www.opengis.net/def/rel/ogc/1.0/queryables"
	// maxDocBytes bounds a JSON document the task reads whole (landing page,
	// conformance, collection, OpenAPI document): a server streaming without end must
	// not exhaust memory.
	maxDocBytes = 32 << 20
)

// link is a link of a JSON document.
type link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
	Type string `json:"type"`
}

// find returns the href of the first link with rel whose type is JSON (or unstated),
// resolved against base; "" when there is none.
func find(links []link, rel, base string) string {
	for _, l := range links {
		if !strings.EqualFold(l.Rel, rel) || l.Href == "" {
			continue
		}
		if t := strings.ToLower(l.Type); t != "" && !strings.Contains(t, "json") {
			continue
		}
		return resolve(base, l.Href)
	}
	return ""
}

func resolve(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// landing is the landing page.
type landing struct {
	Title string `json:"title"`
	Links []link `json:"links"`
	// STACVersion is set by a STAC API's landing page (a catalog).
	STACVersion string `json:"stac_version"`
}

// collection is the collection document.
type collection struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	ItemType string `json:"itemType"`
	Extent   struct {
		Spatial struct {
			BBox [][]float64 `json:"bbox"`
			CRS  string      `json:"crs"`
		} `json:"spatial"`
	} `json:"extent"`
	CRS        []string `json:"crs"`
	StorageCRS string   `json:"storageCrs"`
	Links      []link   `json:"links"`
}

// openAPI is the part of an OpenAPI 3 document that states limit's maximum.
type openAPI struct {
	Paths map[string]map[string]struct {
		Parameters []param `json:"parameters"`
	} `json:"paths"`
	Components struct {
		Parameters map[string]param `json:"parameters"`
	} `json:"components"`
}

type param struct {
	Ref    string `json:"$ref"`
	Name   string `json:"name"`
	In     string `json:"in"`
	Schema struct {
		Maximum *float64 `json:"maximum"`
	} `json:"schema"`
}

// limitMax is the least maximum the document states for an items path's limit
// parameter, 0 when it states none.
func (d *openAPI) limitMax(collection string) int64 {
	best := int64(0)
	take := func(p param) {
		if p.Ref != "" {
			name := p.Ref[strings.LastIndex(p.Ref, "/")+1:]
			p = d.Components.Parameters[name]
		}
		if p.Name == "limit" && p.Schema.Maximum != nil && *p.Schema.Maximum >= 1 {
			if m := int64(*p.Schema.Maximum); best == 0 || m < best {
				best = m
			}
		}
	}
	for path, ops := range d.Paths {
		if !strings.HasSuffix(path, "/items") {
			continue
		}
		if !strings.Contains(path, "{") && !strings.HasSuffix(path, "/"+collection+"/items") {
			continue
		}
		for _, p := range ops["get"].Parameters {
			take(p)
		}
	}
	return best
}

// queryables is a JSON Schema of a collection's properties (Features Part 3).
type queryables struct {
	Properties map[string]struct {
		Type   any    `json:"type"` // a string, or a list of them
		Format string `json:"format"`
		Ref    string `json:"$ref"`
	} `json:"properties"`
}

// getJSON reads the JSON document at u into v.
func (t *Task) getJSON(ctx context.Context, env *tasks.Env, unit, u, what string, v any) error {
	err := env.HTTP.Do(ctx, t.request(env, unit, u, "application/json"), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		dec := json.NewDecoder(io.LimitReader(resp.Body, maxDocBytes))
		if err := dec.Decode(v); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return retry.Transient(dlq.ClassTruncated, fmt.Errorf("%s cut off: %w", what, err))
			}
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("%s is not the JSON document expected: %w", what, err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the %s at %s: %w", what, redact.URL(u), err)
	}
	return nil
}

// request is a GET of u with the task's headers, asking for accept.
func (t *Task) request(env *tasks.Env, unit, u, accept string) retry.Request {
	return retry.Request{
		Unit: unit, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects, Classify: classifyProblem,
		New: func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return nil, err
			}
			for k, v := range t.cfg.Headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("User-Agent", "geoflow")
			req.Header.Set("Accept", accept)
			return req, nil
		},
	}
}

// problem is an OGC API exception (RFC 7807 style) body.
type problem struct {
	Code        string `json:"code"`
	Description string `json:"description"`
	Title       string `json:"title"`
	Detail      string `json:"detail"`
}

// classifyProblem is the retry handler's Classify hook for answers with an error status:
// the server's own description of what went wrong goes into the error (and so the
// dead-letter entry), the status keeps deciding whether to ask again.
func classifyProblem(status int, body []byte) error {
	var p problem
	if json.Unmarshal(body, &p) != nil {
		return nil
	}
	text := strings.Join(slices.DeleteFunc([]string{p.Code, p.Title, p.Description, p.Detail}, func(s string) bool { return s == "" }), ": ")
	if text == "" {
		return nil
	}
	err := fmt.Errorf("HTTP %d: %s", status, spatial.Snippet([]byte(text), 300))
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status == http.StatusTooEarly, status >= 500:
		return nil // the handler's own classes and backoff
	case status >= 400:
		return retry.Permanent(dlq.ClassHTTP4xx, err)
	}
	return nil
}

// classify marks a decode error of an items response's head for the retry handler.
func classify(err error) error {
	var nf *spatial.NotFeaturesError
	switch {
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
