package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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
//     the browser then sends on every request) is the proxy's: the cookie decides;
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
	cop    *http.CrossOriginProtection
	deny   func(w http.ResponseWriter, r *http.Request, code int, msg string)
}

func newGuard(o Options, deny func(w http.ResponseWriter, r *http.Request, code int, msg string)) *guard {
	g := &guard{token: o.Token, digest: sha256.Sum256([]byte(o.Token)), ttl: o.Session, secure: o.CookieSecure, cop: http.NewCrossOriginProtection(), deny: deny}
	if g.ttl <= 0 {
		g.ttl = defaultSession
	}
	g.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deny(w, r, http.StatusForbidden, "cross-origin request refused: state-changing requests must come from geoflow's own pages")
	}))
	return g
}

// open reports whether path is served to anyone: probes, metrics, the static assets
// (geoflow's own code, nothing of the store), and signing in and out.
func open(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/login", "/logout", "/favicon.ico":
		return true
	}
	return strings.HasPrefix(path, "/static/")
}

// authorized reports whether r carries the token: as a Bearer token, which decides
// alone, or else as a session cookie that has not expired.
func (g *guard) authorized(r *http.Request) bool {
	if g.token == "" {
		return true
	}
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return g.validToken(strings.TrimSpace(tok))
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return g.validSession(c.Value, time.Now())
	}
	return false
}

// validToken reports whether given is the token. The digests are compared: a comparison
// of the tokens themselves would end early on a length that differs.
func (g *guard) validToken(given string) bool {
	d := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(d[:], g.digest[:]) == 1
}

// session is the cookie value of a session that ends at until: the end time and an HMAC
// of it keyed by the token. It proves the token was given without holding it, expires
// without any state on the server, and every instance sharing the token accepts it.
func (g *guard) session(until time.Time) string {
	end := strconv.FormatInt(until.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(g.token))
	mac.Write([]byte("geoflow ui session until " + end))
	return end + "." + hex.EncodeToString(mac.Sum(nil))
}

// validSession reports whether v is a session this token made that has not ended at now.
func (g *guard) validSession(v string, now time.Time) bool {
	end, _, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(end, 10, 64)
	if err != nil || now.Unix() >= unix {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(v), []byte(g.session(time.Unix(unix, 0)))) == 1
}

func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.bounded(w, r) {
			return
		}
		if g.token == "" {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !loopbackHost(host) {
				g.deny(w, r, http.StatusMisdirectedRequest, "this server answers to localhost only (Host "+r.Host+
					"); serve other hosts with --listen and --token")
				return
			}
		}
		if err := g.cop.Check(r); err != nil {
			g.deny(w, r, http.StatusForbidden, "cross-origin request refused: state-changing requests must come from geoflow's own pages")
			return
		}
		if !open(r.URL.Path) && !g.authorized(r) {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="geoflow"`)
			g.deny(w, r, http.StatusUnauthorized, "this server needs its token: Authorization: Bearer TOKEN, or sign in on /login")
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

// login checks the token a person typed (a form parsed already) and sets the session cookie.
func (g *guard) login(w http.ResponseWriter, r *http.Request) bool {
	if g.token == "" {
		return true
	}
	if !g.validToken(r.PostFormValue("token")) {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: g.session(time.Now().Add(g.ttl)), Path: "/",
		MaxAge: max(int(g.ttl.Seconds()), 1), HttpOnly: true, Secure: g.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return true
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
