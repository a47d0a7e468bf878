package flows

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/geoflow/geoflow/internal/redact"
)

// part is where in a URL a ${VAR} reference stands.
type part int

const (
	partURL        part = iota // at the start: the variable carries the URL, or its beginning
	partScheme                 // inside the scheme
	partUserinfo               // user name or password
	partHost                   // host name or port
	partPath                   // a path segment
	partQuery                  // a query parameter's name or value
	partWholeQuery             // everything after ?: the variable carries the query
	partFragment               // after #
)

func (p part) String() string {
	return [...]string{"URL", "scheme", "userinfo", "host", "path", "query", "query", "fragment"}[p]
}

// urlPart tells where a reference stands in a URL from the text before it (out,
// expanded) and the template after it (rest).
func urlPart(out, rest string) part {
	if out == "" {
		return partURL
	}
	if strings.Contains(out, "#") {
		return partFragment
	}
	if q := strings.Index(out, "?"); q >= 0 {
		if q == len(out)-1 && (rest == "" || rest[0] == '#') {
			return partWholeQuery
		}
		return partQuery
	}
	scheme, after, ok := strings.Cut(out, "://")
	if !ok {
		if strings.Contains(rest, "://") && !strings.ContainsAny(scheme, "/?#") {
			return partScheme
		}
		return partPath
	}
	if strings.Contains(after, "/") {
		return partPath
	}
	if strings.Contains(after, "@") {
		return partHost
	}
	// Before the host: userinfo when an @ follows before the path.
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if strings.Contains(rest, "@") {
		return partUserinfo
	}
	return partHost
}

// urlValue is the text a variable's value becomes where it stands in a URL: escaped so
// that the server receives exactly the value in a path segment, a query name or value,
// userinfo or a fragment (every byte but letters, digits and - . _ ~ percent-encoded);
// as it is where the variable carries the URL or its whole query (checked that it
// keeps the URL whole); and refused where it cannot be escaped (a host, a scheme) but
// would change the URL's structure.
func urlValue(name, val string, p part) (string, error) {
	switch p {
	case partURL:
		if bad := strings.IndexFunc(val, func(r rune) bool { return r <= ' ' || r == 0x7f }); bad >= 0 {
			return "", fmt.Errorf("${%s} carries the URL but holds a space or a control character at byte %d: percent-encode it (%%20)", name, bad)
		}
		return val, nil
	case partWholeQuery:
		if strings.ContainsAny(val, "# \t\r\n") {
			return "", fmt.Errorf("${%s} carries the query after ? but holds a # or white space: percent-encode its names and values", name)
		}
		if _, err := url.ParseQuery(val); err != nil {
			return "", fmt.Errorf("${%s} carries the query after ? but is no valid query: %v", name, redact.String(err.Error(), val))
		}
		return val, nil
	case partScheme, partHost:
		if bad := strings.IndexFunc(val, func(r rune) bool { return !hostRune(r, p) }); bad >= 0 {
			return "", fmt.Errorf("${%s} stands in the %s of a URL but holds %q, which a %s cannot: "+
				"put the variable in a path, a query value or userinfo (it is escaped there), or make it carry the whole URL",
				name, p, string([]rune(val[bad:])[0]), p)
		}
		return val, nil
	}
	return redact.Escape(val), nil
}

// hostRune reports whether r may stand in a host and port (a name, an IPv4 or a
// bracketed IPv6 address) or a scheme.
func hostRune(r rune, p part) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
		return true
	case p == partScheme:
		return r == '+'
	}
	return r == ':' || r == '[' || r == ']' || r == '_'
}

// expandURL is expand for a URL: each variable's value is placed by urlValue for the
// part of the URL it stands in, and seen is told of every value with its part (to
// collect the secrets). A default (${VAR:-default}) is the flow's own text and goes in
// as it is.
func expandURL(s string, lookup func(string) (string, bool), seen func(name, val string, p part)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	err := walkRefs(s, func(lit string) { b.WriteString(lit) }, func(name, def string, hasDef bool, rest string) error {
		val, ok := lookup(name)
		if !ok || val == "" && hasDef {
			if !hasDef {
				return unset(name)
			}
			b.WriteString(def)
			return nil
		}
		p := urlPart(b.String(), rest)
		v, err := urlValue(name, val, p)
		if err != nil {
			return err
		}
		seen(name, val, p)
		b.WriteString(v)
		return nil
	})
	return b.String(), err
}
