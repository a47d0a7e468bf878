package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/geoflow/geoflow/internal/redact"
)

// liveTerm is a terminal that shows a block of progress lines below what is logged: a
// log line clears the block, is written, and the block is drawn again under it, so
// neither overwrites the other. Safe for concurrent use.
type liveTerm struct {
	mu    sync.Mutex
	w     io.Writer
	block []string // the progress lines on screen, under the cursor's line
}

// Unwrap is the terminal beneath, for telling its size.
func (l *liveTerm) Unwrap() io.Writer { return l.w }

// Write writes log output above the progress block.
func (l *liveTerm) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	l.erase(&b)
	b.Write(p)
	if len(p) > 0 && p[len(p)-1] != '\n' {
		b.WriteByte('\n')
	}
	l.paint(&b)
	if _, err := io.WriteString(l.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// draw replaces the progress block by lines.
func (l *liveTerm) draw(lines []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	l.erase(&b)
	l.block = lines
	l.paint(&b)
	io.WriteString(l.w, b.String())
}

// keep leaves the block on screen as it is, and has what is written next follow it.
func (l *liveTerm) keep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.block = nil
}

// erase moves the cursor to the block's first line and clears it and all below.
func (l *liveTerm) erase(b *strings.Builder) {
	if len(l.block) > 0 {
		fmt.Fprintf(b, "\x1b[%dA\r\x1b[J", len(l.block))
	}
}

func (l *liveTerm) paint(b *strings.Builder) {
	for _, s := range l.block {
		b.WriteString(s + "\n")
	}
}

// termCols is the width of the terminal w writes to, else $COLUMNS, else 80.
func termCols(w io.Writer) int {
	if f, ok := unwrap(w).(*os.File); ok {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return defaultWidth
}

// isTerminal tells whether w writes to a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := unwrap(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// urlRE finds URLs in log text.
var urlRE = regexp.MustCompile(`https?://[^\s"'<>]+`)

// shortURL is a URL as a text log shows it: redacted, without its query, whose length
// the ellipsis stands for ("http://h/wfs?… (612 chars)"): the JSON log keeps it whole.
func shortURL(s string) string {
	s = redact.URL(s)
	i := strings.IndexByte(s, '?')
	if i < 0 || len(s) <= 60 {
		return s
	}
	return s[:i+1] + "…(" + strconv.Itoa(len(s)) + " chars)"
}

// shortURLs shortens every URL in s.
func shortURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlRE.ReplaceAllStringFunc(s, func(u string) string {
		// A URL in a sentence ends before the punctuation after it.
		trimmed := strings.TrimRight(u, ":;,.)")
		return shortURL(trimmed) + u[len(trimmed):]
	})
}

// textAttr shapes an attribute for a text log: URLs shortened, the figures of a summary
// left out (its message says them; a JSON log keeps them).
func textAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 && groups[0] == "summary" {
		return slog.Attr{}
	}
	if a.Value.Kind() == slog.KindString {
		if s := a.Value.String(); strings.Contains(s, "://") {
			return slog.String(a.Key, shortURLs(s))
		}
	}
	if e, ok := a.Value.Any().(error); ok && strings.Contains(e.Error(), "://") {
		return slog.String(a.Key, shortURLs(e.Error()))
	}
	return a
}

// consoleHandler writes log records for a person at a terminal: "15:04:05 message
// key=value ...", the level named only when it is not info, URLs shortened, wrapped
// within the terminal's width under the message. Safe for concurrent use.
type consoleHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	buf   *bytes.Buffer
	attrs slog.Handler // formats the attributes into buf
	level slog.Leveler
	width func() int // the terminal's width, which lines wrap within
}

// newConsoleHandler returns a handler writing to w, a terminal width columns wide.
func newConsoleHandler(w io.Writer, level slog.Leveler, width func() int) *consoleHandler {
	buf := &bytes.Buffer{}
	return &consoleHandler{mu: &sync.Mutex{}, w: w, buf: buf, level: level, width: width,
		attrs: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return textAttr(groups, a)
		}})}
}

func (h *consoleHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *consoleHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Reset()
	if err := h.attrs.Handle(ctx, r); err != nil {
		return err
	}
	body := shortURLs(r.Message)
	if r.Level != slog.LevelInfo {
		body = r.Level.String() + " " + body
	}
	if rest := strings.TrimSpace(h.buf.String()); rest != "" {
		body += " " + rest
	}
	stamp := r.Time.Format(time.TimeOnly) + " "
	indent := strings.Repeat(" ", len(stamp))
	var b strings.Builder
	for i, l := range wrap(body, max(h.width()-1-len(stamp), 20)) {
		if i == 0 {
			b.WriteString(stamp + l + "\n")
		} else {
			b.WriteString(indent + l + "\n")
		}
	}
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *consoleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithAttrs(as)
	return &c
}

func (h *consoleHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithGroup(name)
	return &c
}
