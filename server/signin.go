package server

import (
	"container/list"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The sign-in throttle: after signinFailures failed sign-ins from one client within
// signinWindow, that client's tokens are not checked (429, Retry-After) until the oldest of
// those failures is signinWindow old. The window slides: it frees one failure at a time,
// each a minute after it was made, so a client that keeps guessing gets signinFailures
// guesses a minute at most. A genuine session cookie still passes: it cannot be guessed.
// A valid token does not clear a client's failures: behind one address (a NAT, a proxy)
// a client that holds the token would otherwise hand another its guesses back.
const (
	signinFailures = 5
	signinWindow   = time.Minute
	// signinClients caps the clients the throttle remembers: past it, the one whose last
	// failure is oldest is forgotten first (those older than signinWindow are forgotten
	// anyway).
	signinClients = 10000
)

// throttle counts the failed sign-ins of each client over signinWindow and says which
// clients are throttled. Its memory is bounded (signinClients); it is safe for
// concurrent use.
type throttle struct {
	now func() time.Time
	max int

	mu sync.Mutex
	// recent orders the clients by their last failure, latest first; clients finds
	// each one's element. Its values are *failures.
	recent  *list.List
	clients map[string]*list.Element
}

// failures are a client's failed sign-ins still in the window, oldest first: at most
// signinFailures of them.
type failures struct {
	client string
	at     []time.Time
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, max: signinClients, recent: list.New(), clients: map[string]*list.Element{}}
}

// throttledFor is how long a client whose failed sign-ins were at (oldest first) is
// still throttled at now: until the oldest of its last signinFailures is signinWindow
// old; zero when it is not throttled.
func throttledFor(at []time.Time, now time.Time) time.Duration {
	if len(at) < signinFailures {
		return 0
	}
	return max(at[len(at)-signinFailures].Add(signinWindow).Sub(now), 0)
}

// attempt is what became of a sign-in attempt.
type attempt struct {
	// ok: the credential was checked and is valid.
	ok bool
	// refused, when above zero: the client is throttled for that long more, and the
	// credential was not checked.
	refused time.Duration
	// throttles, when above zero: the credential was checked and is wrong, and this
	// failure throttles its client for that long (its refusals are to come).
	throttles time.Duration
}

// attempt checks a credential of client unless the client is throttled, and records a
// failure when check says it is wrong. The throttle's lock is held over check, so that
// concurrent attempts of one client cannot make more than signinFailures failures: check
// must be quick (a digest's comparison).
func (t *throttle) attempt(client string, check func() bool) attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	e, known := t.clients[client]
	if known {
		if wait := throttledFor(e.Value.(*failures).at, now); wait > 0 {
			return attempt{refused: wait}
		}
	}
	if check() {
		return attempt{ok: true}
	}
	if !known {
		e = t.add(client, now)
	}
	f := e.Value.(*failures)
	f.at = append(inWindow(f.at, now), now)
	t.recent.MoveToFront(e)
	return attempt{throttles: throttledFor(f.at, now)}
}

// inWindow is at without the failures signinWindow old or older at now, and without
// those beyond the last signinFailures-1 (room for one more).
func inWindow(at []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(at) && (now.Sub(at[i]) >= signinWindow || len(at)-i >= signinFailures) {
		i++
	}
	return append(at[:0], at[i:]...)
}

// add starts remembering client, first forgetting the clients whose last failure left
// the window and, past the cap, those whose last failure is oldest. The caller holds
// the lock.
func (t *throttle) add(client string, now time.Time) *list.Element {
	for e := t.recent.Back(); e != nil; e = t.recent.Back() {
		f := e.Value.(*failures)
		if t.recent.Len() < t.max && now.Sub(f.at[len(f.at)-1]) < signinWindow {
			break
		}
		t.recent.Remove(e)
		delete(t.clients, f.client)
	}
	e := t.recent.PushFront(&failures{client: client})
	t.clients[client] = e
	return e
}

// clientOf is the address r comes from (the host part of RemoteAddr) and the key the
// throttle counts it under: the address itself, or for IPv6 its /64, the network a single
// host is commonly given to pick addresses from. Behind a reverse proxy every client is
// the proxy's address.
func clientOf(r *http.Request) (addr, key string) {
	addr = r.RemoteAddr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		addr = h
	}
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr, addr
	}
	return addr, (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// retryAfter is wait in whole seconds, rounded up, for a Retry-After header.
func retryAfter(wait time.Duration) int {
	return int((wait + time.Second - 1) / time.Second)
}

// credentialKind names the kind of credential a failure was made with: the label of
// geoflow_ui_signin_failures_total.
type credentialKind string

const (
	kindBearer credentialKind = "bearer"
	kindLogin  credentialKind = "login"
	kindCookie credentialKind = "cookie"
)

// offered is the credential r carries for the guard: a Bearer token, which decides alone,
// else the session cookie; "" when it carries neither (not a sign-in attempt). Another
// Authorization scheme (a proxy's Basic) is not geoflow's.
func offered(r *http.Request) (credentialKind, string) {
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return kindBearer, strings.TrimSpace(tok)
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return kindCookie, c.Value
	}
	return "", ""
}
