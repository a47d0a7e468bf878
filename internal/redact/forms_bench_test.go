package redact

import "testing"

// BenchmarkForms is what building the forms of one secret costs (a dead letter or a
// failed attempt builds those of the request's secrets).
func BenchmarkForms(b *testing.B) {
	for b.Loop() {
		Forms("k&y/SECRET+FFFF6666=x y")
	}
}

// BenchmarkSetString is what masking a log line costs with a set of three secrets.
func BenchmarkSetString(b *testing.B) {
	var s Set
	s.Add(shapedSecrets[:3]...)
	line := "GET https://h/wfs?SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf%3Aparcels&COUNT=200&BBOX=48.0%2C11.4%2C48.1%2C11.5 failed: HTTP 503: Service Unavailable"
	for b.Loop() {
		s.String(line)
	}
}

// BenchmarkSetTokens is BenchmarkSetString without the masking by position (what the
// log handler does).
func BenchmarkSetTokens(b *testing.B) {
	var s Set
	s.Add(shapedSecrets[:3]...)
	line := "GET https://h/wfs?SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf%3Aparcels&COUNT=200&BBOX=48.0%2C11.4%2C48.1%2C11.5 failed: HTTP 503: Service Unavailable"
	for b.Loop() {
		s.tokens(line)
	}
}
