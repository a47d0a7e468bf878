package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// cookieName holds the session of a browser that gave the token on /login.
const cookieName = "geoflow_session"

// defaultSession is how long a sign-in lasts when Options.Session is zero: a working day,
// so that a cookie left in a browser stops opening the server by the next morning.
const defaultSession = 12 * time.Hour

// MinTokenLength is the shortest --token accepted: a token is the only thing between a
// non-loopback listener and the runs it can start.
const MinTokenLength = 16

// CheckListen says whether geoflow can serve on addr with token: a non-loopback address
// needs a token of MinTokenLength characters or more. The error says what to do.
func CheckListen(addr, token string) error {
	if token != "" && len(token) < MinTokenLength {
		return errors.New("--token is too short: at least 16 characters (GEOFLOW_UI_TOKEN too)")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if token == "" && !loopbackHost(host) {
		return errors.New("--listen " + addr + " is reachable from other machines: set --token (or GEOFLOW_UI_TOKEN) " +
			"so that only those who hold it can see and start runs, or listen on 127.0.0.1")
	}
	return nil
}

// loopbackHost reports whether host (a name or an address, without a port) can only be
// reached from this machine. "" (all interfaces) and 0.0.0.0 cannot.
func loopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxBody is the largest request body geoflow reads (a run's or a triage's JSON, the
// sign-in form): anything larger is answered 413, Request Entity Too Large.
const (
	maxBody     = 1 << 20
	maxBodyText = "1 MiB"
)

// guard is what stands before every route but the probes and the static assets:
//   - a request body over maxBody is refused (413): at once when its Content-Length says
//     so, else when reading it reaches the limit (capBody);
//   - with a token, a request must carry it (Authorization: Bearer, or the session
//     cookie /login sets); pages without it are sent to /login, the API answers 401.
//     An Authorization header of another scheme (the Basic of a proxy in front, which
//     the browser then sends on every request) is the proxy's: the cookie decides.
//     Failed sign-ins are logged and counted, and a client that makes too many is
//     throttled (throttle);
//   - without one (the server listens on loopback only), the Host must be a loopback
//     name, so that a page of another site cannot reach the server through a DNS name
//     it points at 127.0.0.1 (DNS rebinding);
//   - state-changing requests must come from the UI's own pages (Sec-Fetch-Site or
//     Origin; http.CrossOriginProtection) and, for the API, be JSON, which a cross-site
//     form cannot send.
type guard struct {
	token string
	// digest is the token's SHA-256: tokens are compared by digest, in constant time
	// and whatever their length.
	digest [sha256.Size]byte
	// ttl is how long a session cookie lasts; secure marks it Secure even over plain
	// HTTP (the server sits behind a TLS proxy, and cannot see it).
	ttl    time.Duration
	secure bool
	// metricsPublic serves /metrics without the token.
	metricsPublic bool
	now           func() time.Time
	cop           *http.CrossOriginProtection
	deny          func(w http.ResponseWriter, r *http.Request, code int, msg string)

	throttle  *throttle
	log       *slog.Logger
	failures  *prometheus.CounterVec
	throttled prometheus.Counter
}

func newGuard(o Options, log *slog.Logger, deny func(w http.ResponseWriter, r *http.Request, code int, msg string)) (*guard, error) {
	g := &guard{token: o.Token, digest: sha256.Sum256([]byte(o.Token)), ttl: o.Session, secure: o.CookieSecure,
		metricsPublic: o.MetricsPublic, now: o.Now, cop: http.NewCrossOriginProtection(), deny: deny, log: log}
	if g.ttl <= 0 {
		g.ttl = defaultSession
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.throttle = newThrottle(g.now)
	g.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deny(w, r, http.StatusForbidden, "cross-origin request refused: state-changing requests must come from geoflow's own pages")
	}))
	// No client address among the labels: a scan from many addresses would make series
	// without bound. The log names them.
	g.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "geoflow_ui_signin_failures_total",
		Help: "Failed sign-ins to the web UI and its API, by credential: a wrong Bearer token, a wrong token on /login, a session cookie that does not verify.",
	}, []string{"kind"})
	for _, k := range []credentialKind{kindBearer, kindLogin, kindCookie} {
		g.failures.WithLabelValues(string(k))
	}
	g.throttled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "geoflow_ui_signin_throttled_total",
		Help: "Sign-ins refused unchecked (429) because their client made too many failed ones.",
	})
	for _, c := range []prometheus.Collector{g.failures, g.throttled} {
		if err := o.Registry.Register(c); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// open reports whether path is served to anyone: probes, the static assets (geoflow's
// own code, nothing of the store), signing in and out, and /metrics when it is public.
func (g *guard) open(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/login", "/logout", "/favicon.ico":
		return true
	case "/metrics":
		return g.metricsPublic
	}
	return strings.HasPrefix(path, "/static/")
}

// validToken reports whether given is the token. The digests are compared: a comparison
// of the tokens themselves would end early on a length that differs.
func (g *guard) validToken(given string) bool {
	d := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(d[:], g.digest[:]) == 1
}

// mac is the signature of a session ending at end (Unix seconds, as written in the cookie).
func (g *guard) mac(end string) []byte {
	mac := hmac.New(sha256.New, []byte(g.token))
	mac.Write([]byte("geoflow ui session until " + end))
	return mac.Sum(nil)
}

// session is the cookie value of a session that ends at until: the end time and an HMAC
// of it keyed by the token. It proves the token was given without holding it, expires
// without any state on the server, and every instance sharing the token accepts it.
func (g *guard) session(until time.Time) string {
	end := strconv.FormatInt(until.Unix(), 10)
	return end + "." + hex.EncodeToString(g.mac(end))
}

// sessionState is what a session cookie is worth.
type sessionState int

const (
	// sessionForged: its signature does not verify: made up, edited, or signed with
	// another token (an earlier one, another server's on the same host). A failed sign-in.
	sessionForged sessionState = iota
	// sessionEnded: genuine, but past its end, as a browser may keep it. Not an attack.
	sessionEnded
	sessionValid
)

// cookie says what the session cookie value v is worth at now.
func (g *guard) cookie(v string, now time.Time) sessionState {
	end, sig, ok := strings.Cut(v, ".")
	if !ok {
		return sessionForged
	}
	unix, err := strconv.ParseInt(end, 10, 64)
	given, herr := hex.DecodeString(sig)
	if err != nil || herr != nil || !hmac.Equal(given, g.mac(end)) {
		return sessionForged
	}
	if now.Unix() >= unix {
		return sessionEnded
	}
	return sessionValid
}

func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.bounded(w, r) || !g.addressed(w, r) {
			return
		}
		if err := g.cop.Check(r); err != nil {
			g.deny(w, r, http.StatusForbidden, "cross-origin request refused: state-changing requests must come from geoflow's own pages")
			return
		}
		if !g.admit(w, r) {
			return
		}
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/") {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				g.deny(w, r, http.StatusUnsupportedMediaType, "send a JSON body (Content-Type: application/json)")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// capBody caps the body of r at maxBody: reading further fails with *http.MaxBytesError
// (a chunked body), which the handlers answer 413 (bodyStatus). w must be the server's
// own writer, not one wrapped around it: the reader tells it that the limit was hit, and
// the server then closes the connection instead of reading on to reuse it.
func capBody(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
}

// bounded refuses a body declared larger than maxBody (Content-Length) at once: 413,
// before any of it is read.
func (g *guard) bounded(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength <= maxBody {
		return true
	}
	w.Header().Set("Connection", "close")
	g.deny(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %s: %d bytes sent, geoflow reads %d at most",
		maxBodyText, r.ContentLength, maxBody))
	return false
}

// addressed reports whether a server without a token may answer r: only when r names
// a loopback host. Otherwise it answers 421.
func (g *guard) addressed(w http.ResponseWriter, r *http.Request) bool {
	if g.token != "" {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !loopbackHost(host) {
		g.deny(w, r, http.StatusMisdirectedRequest, "this server answers to localhost only (Host "+r.Host+
			"); serve other hosts with --listen and --token")
		return false
	}
	return true
}

// admit reports whether r may go on: its route is open, the server has no token, or r
// carries a valid credential. Otherwise it has answered: 429 when the client is
// throttled, else 401, or for a page the way to /login.
func (g *guard) admit(w http.ResponseWriter, r *http.Request) bool {
	if g.token == "" || g.open(r.URL.Path) {
		return true
	}
	kind, value := offered(r)
	var a attempt
	switch kind {
	case kindBearer:
		a = g.attempt(r, kind, func() bool { return g.validToken(value) })
	case kindCookie:
		switch g.cookie(value, g.now()) {
		case sessionValid:
			return true
		case sessionForged:
			a = g.attempt(r, kind, func() bool { return false })
		}
	}
	switch {
	case a.ok:
		return true
	case a.refused > 0:
		g.tooMany(w, r, a.refused)
	default:
		g.unauthorized(w, r, kind == kindCookie)
	}
	return false
}

// attempt checks a credential of kind that r carries, unless its client is throttled,
// and logs and counts what the throttle says: a failure, a refusal, a client throttled.
// The log names the client, the request and the kind of credential, never its value.
func (g *guard) attempt(r *http.Request, kind credentialKind, check func() bool) attempt {
	addr, key := clientOf(r)
	a := g.throttle.attempt(key, check)
	switch {
	case a.ok:
	case a.refused > 0:
		g.throttled.Inc()
	default:
		g.failures.WithLabelValues(string(kind)).Inc()
		g.log.Warn("failed sign-in", "client", addr, "method", r.Method, "path", r.URL.Path, "credential", string(kind))
	}
	if a.throttles > 0 {
		g.log.Warn(fmt.Sprintf("client %s throttled for %d s after %d failed sign-ins", addr, retryAfter(a.throttles), signinFailures),
			"client", addr, "retry_after_s", retryAfter(a.throttles))
	}
	return a
}

// unauthorized answers a request without a valid credential: a page is sent to /login,
// the rest (the API, /metrics: a program asks) gets 401. A session cookie that opened nothing (ended, or forged) is removed
// from the browser, which would otherwise send it, and count it, again and again.
func (g *guard) unauthorized(w http.ResponseWriter, r *http.Request, dropCookie bool) {
	if dropCookie {
		g.logout(w, r)
	}
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/metrics" {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="geoflow"`)
	g.deny(w, r, http.StatusUnauthorized, "this server needs its token: Authorization: Bearer TOKEN, or sign in on /login")
}

// tooMany answers a throttled client: 429, with when to try again.
func (g *guard) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
	g.deny(w, r, http.StatusTooManyRequests, fmt.Sprintf(
		"too many failed sign-ins from this address: its tokens are not checked for %d s (Retry-After)", retryAfter(wait)))
}

// login checks the token a person typed on /login (a form parsed already) and, when it
// is the token, sets the session cookie. A throttled client's token is not checked.
func (g *guard) login(w http.ResponseWriter, r *http.Request) attempt {
	if g.token == "" {
		return attempt{ok: true}
	}
	given := r.PostFormValue("token")
	a := g.attempt(r, kindLogin, func() bool { return g.validToken(given) })
	if !a.ok {
		return a
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: g.session(g.now().Add(g.ttl)), Path: "/",
		MaxAge: max(int(g.ttl.Seconds()), 1), HttpOnly: true, Secure: g.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return a
}

// logout removes the session cookie from the browser. A copy of it taken before still
// opens the server until it ends (Options.Session); changing the token ends them all.
func (g *guard) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: g.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// safeNext is the local path to go to after /login; anything else goes to /. Browsers
// drop tabs and newlines anywhere in a Location and read \ as /, so "/\t/evil.example"
// would leave the site: a control byte, a space or a backslash anywhere refuses next, and
// what is left must parse as a path with neither scheme nor host.
func safeNext(next string) string {
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
