package redact

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
)

// Set holds secret values to mask wherever they appear as a token of their own (String
// does it): the values a flow takes from the environment into a header or a URL. The
// zero value is an empty set ready to use; it is safe for concurrent use, and a nil *Set
// masks nothing.
type Set struct {
	mu    sync.RWMutex
	vals  []string
	forms []string // Forms(vals...)
}

// Add adds values to the set; those shorter than String masks, and numbers (a port is
// no secret, and masking it would garble every figure that equals it), are ignored.
func (s *Set) Add(vals ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			continue
		}
		if len(v) >= minSecret && !slices.Contains(s.vals, v) {
			s.vals = append(s.vals, v)
		}
	}
	s.forms = Forms(s.vals...)
}

// Values returns the set's values.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.vals)
}

// String is String(x, the set's values...).
func (s *Set) String(x string) string {
	return positional(s.tokens(x))
}

func (s *Set) empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals) == 0
}

// tokens masks the set's values in x in each of their forms (Forms), and nothing by
// position.
func (s *Set) tokens(x string) string {
	if s == nil {
		return x
	}
	s.mu.RLock()
	forms := s.forms
	s.mu.RUnlock()
	return maskForms(x, forms)
}

// Handler returns a slog.Handler that passes h every record with its message and its
// attributes' text (strings, errors, anything printed) masked by the set's values: a
// secret a message echoes reaches no log line. Credentials by position (URL passwords,
// key parameters) are masked where the URLs and errors are made, not here, so that
// ordinary text is never touched.
func (s *Set) Handler(h slog.Handler) slog.Handler { return &handler{h: h, s: s} }

type handler struct {
	h slog.Handler
	s *Set
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if h.s.empty() {
		return h.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, h.s.tokens(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(red), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), s: h.s}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.tokens(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.s.tokens(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, h.s.tokens(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Writer returns a writer that passes w what it is given with the set's values masked in
// each of their forms (and nothing by position): for a command's output, where a summary
// may name a host or a URL that holds a secret. Each Write is masked whole, so a secret
// split across two writes is not found; fmt's printers write each call at once. The
// writer's Unwrap returns w (a terminal check looks through it).
func (s *Set) Writer(w io.Writer) io.Writer { return &writer{w: w, s: s} }

type writer struct {
	w io.Writer
	s *Set
}

func (m *writer) Write(p []byte) (int, error) {
	if m.s.empty() {
		return m.w.Write(p)
	}
	if _, err := io.WriteString(m.w, m.s.tokens(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the writer masked output goes to.
func (m *writer) Unwrap() io.Writer { return m.w }
