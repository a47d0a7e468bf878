package wfsserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Switcher is what ControlHandler switches: a *Server, or a sample server built on one.
type Switcher interface {
	SetRevision(rev int, c Changes) error
	Revision() (int, Changes)
	SetEmpty(on bool)
	Empty() bool
}

var _ Switcher = (*Server)(nil)

// ControlHandler returns the control endpoints of a dev server, for changing its data
// between two harvests without a restart. Mount it at "/_dev/" on dev servers only:
//
//	POST /_dev/revision?rev=N[&edited=E&deleted=D&added=A&hidden=H]  switch to revision N; counts not given stay
//	POST /_dev/empty?on=1 (or on=0)                          switch the empty mode
//	GET  /_dev/state                                         the current state
//
// Each answers the state as JSON: {"revision":1,"edited":10,"deleted":5,"added":20,"empty":false}.
// Bad values are answered 400, other methods 405.
func ControlHandler(sw Switcher) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		want, ok := map[string]string{"revision": http.MethodPost, "empty": http.MethodPost, "state": http.MethodGet}[op]
		if !ok {
			http.Error(w, "no such control: "+r.URL.Path+" (revision, empty, state)", http.StatusNotFound)
			return
		}
		if r.Method != want {
			w.Header().Set("Allow", want)
			http.Error(w, op+" takes "+want, http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		switch op {
		case "state":
		case "revision":
			rev, c := sw.Revision()
			for _, p := range []struct {
				name string
				to   *int
			}{{"rev", &rev}, {"edited", &c.Edited}, {"deleted", &c.Deleted}, {"added", &c.Added}, {"hidden", &c.Hidden}} {
				x := q.Get(p.name)
				if x == "" {
					continue
				}
				n, err := strconv.Atoi(x)
				if err != nil {
					http.Error(w, p.name+" must be an integer, not "+strconv.Quote(x), http.StatusBadRequest)
					return
				}
				*p.to = n
			}
			if !q.Has("rev") {
				http.Error(w, "rev is required: /_dev/revision?rev=1", http.StatusBadRequest)
				return
			}
			if err := sw.SetRevision(rev, c); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		case "empty":
			on, err := strconv.ParseBool(q.Get("on"))
			if err != nil {
				http.Error(w, "on must be 1 or 0 (true or false), not "+strconv.Quote(q.Get("on")), http.StatusBadRequest)
				return
			}
			sw.SetEmpty(on)
		}
		rev, c := sw.Revision()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"revision": rev, "edited": c.Edited,
			"deleted": c.Deleted, "added": c.Added, "hidden": c.Hidden, "empty": sw.Empty()})
	})
}
