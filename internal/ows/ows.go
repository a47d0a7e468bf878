// Package ows builds the key-value-pair requests of OGC web services (WFS, WMS) on a
// base URL a user configured, which may carry parameters of its own (?map=...).
package ows

import (
	"net/url"
	"strings"
)

// URL adds params to base, keeping base's own parameters but replacing any that params
// set too, whatever their case (OGC parameter names are case-insensitive). params keep
// their order after base's own. A base that does not parse is returned unchanged, for
// the request to fail with a clear error.
func URL(base string, params [][2]string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	for _, kv := range params {
		for k := range q {
			if strings.EqualFold(k, kv[0]) {
				q.Del(k)
			}
		}
	}
	var b strings.Builder
	b.WriteString(q.Encode())
	for _, kv := range params {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[0]))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(kv[1]))
	}
	u.RawQuery = b.String()
	return u.String()
}
