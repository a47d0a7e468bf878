package server

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
)

// page is what every page's layout needs.
type page struct {
	Title, Page string
	Store       string
	// Flows and FlowTasks fill the rerun dialog; CanRun says whether this server
	// starts runs and replays (it has a launcher), CanDiscard whether it discards dead
	// letters (it is not read-only): the pages offer only what the API would do.
	Flows      []schedule.FlowInfo
	FlowTasks  map[string][]string
	CanRun     bool
	CanDiscard bool
	// Basemap, when set, is drawn beneath the page's map.
	Basemap *basemap
	// SignOut offers to end the session: the server has a token.
	SignOut bool
}

// pages holds one parsed template set per page, each the layout plus the page.
type pages struct {
	sets map[string]*template.Template
}

func loadPages(a *assets) (*pages, error) {
	funcs := template.FuncMap{
		"asset":      a.url,
		"num":        num,
		"ago":        ago,
		"ahead":      ahead,
		"elapsed":    elapsed,
		"ms":         millis,
		"clip":       clip,
		"errSummary": errSummary,
		"json":       jsonString,
		"area":       runArea,
		// present is how many of the features a run skipped were already stored by
		// earlier runs: skipped less those it had stored itself (overlap).
		"present": func(skipped, overlap int64) int64 { return skipped - overlap },
	}
	base, err := template.New("layout").Funcs(funcs).ParseFS(webFS, "web/templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(webFS, "web/templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{sets: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "web/templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(webFS, n)
		if err != nil {
			return nil, err
		}
		p.sets[name] = t
	}
	return p, nil
}

// render writes the page name with data and status code, or a 500 when the template
// fails (rendered into a buffer first, so a failure never leaves half a page). The
// headers are set before the status is written: set after, they would be dropped.
func (h *handler) render(w http.ResponseWriter, r *http.Request, code int, name, tmpl string, data any) {
	var b bytes.Buffer
	if err := h.pages.sets[name].ExecuteTemplate(&b, tmpl, data); err != nil {
		h.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered; see the server's log", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func (h *handler) page(r *http.Request, title, name string) page {
	p := page{Title: title, Page: name, Store: h.o.StoreName, CanRun: h.o.Launcher != nil, CanDiscard: !h.o.ReadOnly,
		SignOut: h.o.Token != "", FlowTasks: map[string][]string{}}
	if h.o.Catalog == nil {
		return p
	}
	infos, err := h.o.Catalog.List(1)
	if err != nil {
		h.log.Warn("listing the flows", "err", err)
		return p
	}
	p.Flows = infos
	for _, fi := range infos {
		if fi.Problem != "" || fi.Name == "" {
			continue
		}
		if f, err := h.o.Catalog.Load(fi.Name); err == nil {
			ids := []string{}
			for _, t := range f.Tasks {
				ids = append(ids, t.ID)
			}
			p.FlowTasks[fi.Name] = ids
		}
	}
	return p
}

func (p page) FlowNames() []string {
	var out []string
	for _, fi := range p.Flows {
		if fi.Name != "" && !slices.Contains(out, fi.Name) {
			out = append(out, fi.Name)
		}
	}
	return out
}

type flowRow struct {
	Info schedule.FlowInfo
	Last *store.RunRecord
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		h.notFound(w, r)
		return
	}
	ctx := r.Context()
	data := struct {
		page
		FlowRows []flowRow
		Running  int
		Dead     dlq.Stats
		Chart    chart
		Recent   []store.RunRecord
	}{page: h.page(r, "Overview", "overview")}
	runs, err := h.o.Store.ListRuns(ctx, store.RunFilter{Limit: 60})
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	for _, fi := range data.Flows {
		row := flowRow{Info: fi}
		if fi.Name != "" {
			last, err := h.o.Store.ListRuns(ctx, store.RunFilter{Flow: fi.Name, Limit: 1})
			if err != nil {
				h.failPage(w, r, err)
				return
			}
			if len(last) > 0 {
				row.Last = &last[0]
			}
		}
		data.FlowRows = append(data.FlowRows, row)
	}
	for _, run := range runs {
		if run.Status == store.Running {
			data.Running++
		}
	}
	rows, err := h.o.Store.DeadLetterStats(ctx, dlq.Filter{Status: dlq.StatusOpen})
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	data.Dead = dlq.Aggregate(rows)
	data.Chart = runChart(runs)
	data.Recent = runs[:min(len(runs), 10)]
	h.render(w, r, http.StatusOK, "overview", "layout", data)
}

func (h *handler) runsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	type filter struct{ Flow, Status, Trigger, Since string }
	data := struct {
		page
		Filter             filter
		Statuses, Triggers []string
		Runs               []store.RunRecord
		More               bool
		Problem            string
	}{page: h.page(r, "Runs", "runs"), Filter: filter{q.Get("flow"), q.Get("status"), q.Get("trigger"), q.Get("since")},
		Statuses: []string{string(store.Running), string(store.Done), string(store.Incomplete), string(store.Failed), string(store.Interrupted)},
		Triggers: []string{store.TriggerManual, store.TriggerSchedule, store.TriggerReplay, store.TriggerUI}}
	var since time.Time
	if data.Filter.Since != "" {
		t, err := dlq.ParseSince(data.Filter.Since, time.Now())
		if err != nil {
			data.Problem = "since: " + err.Error()
		}
		since = t
	}
	const show = 200
	// The trigger and time are filtered here, over the latest runs the store returns.
	runs, err := h.o.Store.ListRuns(r.Context(), store.RunFilter{Flow: data.Filter.Flow, Status: data.Filter.Status, Limit: 2000})
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	for _, run := range runs {
		if (data.Filter.Trigger != "" && run.Trigger != data.Filter.Trigger) || run.StartedAt.Before(since) {
			continue
		}
		if len(data.Runs) == show {
			data.More = true
			break
		}
		data.Runs = append(data.Runs, run)
	}
	h.render(w, r, http.StatusOK, "runs", "layout", data)
}

func (h *handler) runPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.notFound(w, r)
		return
	}
	run, err := h.o.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r)
		return
	}
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	data := struct {
		page
		Run       store.RunRecord
		Area      string
		OnlyTasks string
	}{Run: run}
	if info, err := h.o.Store.RunInfo(r.Context(), id); err == nil && info.Area != nil {
		b := info.Area
		data.Area = strconv.FormatFloat(b.Min[0], 'f', -1, 64) + "," + strconv.FormatFloat(b.Min[1], 'f', -1, 64) + "," +
			strconv.FormatFloat(b.Max[0], 'f', -1, 64) + "," + strconv.FormatFloat(b.Max[1], 'f', -1, 64)
	}
	switch r.URL.Query().Get("fragment") {
	case "tasks", "head": // the parts of the page that live polling refreshes
		h.render(w, r, http.StatusOK, "run", r.URL.Query().Get("fragment"), data)
		return
	}
	data.page = h.page(r, "Run "+strconv.FormatInt(id, 10), "run")
	data.Basemap = h.basemapOf(r.Context(), run.Flow)
	h.render(w, r, http.StatusOK, "run", "layout", data)
}

func (h *handler) dlqPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	args := dlqArgs(q)
	data := struct {
		page
		Args     dlq.FilterArgs
		Run      string // as typed, so that a bad one shows with its problem
		Classes  []dlq.Class
		Statuses []dlq.Status
		Entries  []dlq.Entry
		Stats    dlq.Stats
		Query    string
		More     bool
		Problem  string
	}{page: h.page(r, "Dead letters", "dlq"), Args: args, Run: q.Get("run"), Classes: dlq.Classes(), Statuses: dlq.Statuses(),
		Query: dlqQuery(args)}
	data.Basemap = h.basemapOf(r.Context(), args.Flow)
	// The API's validation: a filter that does not parse lists nothing, rather than
	// every entry with the bad part dropped, under buttons that act on all in view.
	f, err := dlqFilter(r)
	if err != nil {
		data.Problem = err.Error()
		h.render(w, r, http.StatusOK, "dlq", "layout", data)
		return
	}
	rows, err := h.o.Store.DeadLetterStats(r.Context(), f)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	data.Stats = dlq.Aggregate(rows)
	const show = 500
	f.Limit = show
	if data.Entries, err = h.o.Store.ListDeadLetters(r.Context(), f); err != nil {
		h.failPage(w, r, err)
		return
	}
	data.More = data.Stats.Total > int64(len(data.Entries))
	h.render(w, r, http.StatusOK, "dlq", "layout", data)
}

// dlqArgs reads the dead-letter filter from a query, by the CLI's flag names.
func dlqArgs(q url.Values) dlq.FilterArgs {
	run, _ := strconv.ParseInt(q.Get("run"), 10, 64)
	return dlq.FilterArgs{Flow: q.Get("flow"), Task: q.Get("task"), Run: run, Class: q.Get("class"),
		Status: q.Get("status"), Since: q.Get("since"), BBox: q.Get("bbox"), Host: q.Get("host")}
}

// dlqQuery writes a as a query string, for links and the map's data URL.
func dlqQuery(a dlq.FilterArgs) string {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("flow", a.Flow)
	set("task", a.Task)
	if a.Run > 0 {
		v.Set("run", strconv.FormatInt(a.Run, 10))
	}
	set("class", a.Class)
	set("status", a.Status)
	set("since", a.Since)
	set("bbox", a.BBox)
	set("host", a.Host)
	return v.Encode()
}

// HostLink is the page's filter narrowed to host.
func (p page) HostLink(host string) string { return "/dlq?host=" + url.QueryEscape(host) }

func (h *handler) flowPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	data := struct {
		page
		Name, File, Schedule, YAML, Problem string
		DAG                                 *dag
		Runs                                []store.RunRecord
		LastRun, RecordedRun                int64
	}{page: h.page(r, "Flow "+name, "flow"), Name: name}
	data.Basemap = h.basemapOf(r.Context(), name)
	runs, err := h.o.Store.ListRuns(r.Context(), store.RunFilter{Flow: name, Limit: 20})
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	data.Runs = runs
	if len(runs) > 0 {
		data.LastRun = runs[0].ID
	}
	var src []byte
	if h.o.Catalog != nil {
		f, err := h.o.Catalog.Load(name)
		switch {
		case errors.Is(err, ErrNoFlow) && len(runs) == 0:
			h.notFound(w, r)
			return
		case err != nil:
			data.Problem = err.Error()
		default:
			data.File, data.Schedule, src = f.File, f.Schedule, f.Source
			data.DAG = layoutDAG(f)
		}
	}
	if id, _ := strconv.ParseInt(r.URL.Query().Get("run"), 10, 64); id > 0 {
		if text, err := h.recordedFlow(r, id, name); err != nil {
			data.Problem = err.Error()
		} else if text != "" {
			src, data.RecordedRun = []byte(text), id
		}
	}
	// The text as written: ${VAR} unexpanded, so no secret of the environment is in it;
	// a credential written into a URL is masked all the same.
	data.YAML = redact.String(string(src))
	h.render(w, r, http.StatusOK, "flow", "layout", data)
}

// recordedFlow is the flow text run id recorded ("" for a run recorded before flows
// were kept).
func (h *handler) recordedFlow(r *http.Request, id int64, name string) (string, error) {
	info, err := h.o.Store.RunInfo(r.Context(), id)
	if err != nil {
		return "", err
	}
	if info.Flow != name {
		return "", errors.New("run " + strconv.FormatInt(id, 10) + " is a run of " + info.Flow + ", not of " + name)
	}
	return info.FlowText, nil
}

// loginPage shows the sign-in form and, posted, checks the token: a wrong one shows the
// form again (401), a throttled client is told when to try again (429) without its token
// being checked, a form over maxBody is refused (413).
func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	// Parsed first: FormValue would parse it too, and drop the error of a body too large.
	formErr := r.ParseForm()
	data := struct {
		page
		Next, Problem string
	}{page: page{Title: "Sign in", Page: "login"}, Next: safeNext(r.FormValue("next"))} // no store named to those without the token
	if r.Method != http.MethodPost {
		h.render(w, r, http.StatusOK, "login", "layout", data)
		return
	}
	if formErr != nil {
		data.Problem = bodyError(formErr).Error()
		h.render(w, r, bodyStatus(formErr), "login", "layout", data)
		return
	}
	code := http.StatusUnauthorized
	switch a := h.guard.login(w, r); {
	case a.ok:
		http.Redirect(w, r, data.Next, http.StatusSeeOther)
		return
	case a.refused > 0:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(a.refused)))
		code, data.Problem = http.StatusTooManyRequests, "Too many failed sign-ins from this address: try again in "+
			strconv.Itoa(retryAfter(a.refused))+" s."
	default:
		data.Problem = "That is not this server's token."
	}
	h.render(w, r, code, "login", "layout", data)
}

// logout ends this browser's session and shows the sign-in page.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	h.guard.logout(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	w.Write([]byte("not found: " + cmp.Or(r.URL.Path, "/") + "\n"))
}

func (h *handler) failPage(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Error("page failed", "path", r.URL.Path, "err", err)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	w.Write([]byte("the store could not answer: " + redact.String(err.Error()) + "\n"))
}

// runArea is a run's area as geoflow run --bbox takes it, "" for a run of the whole flow.
func runArea(a *[4]float64) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf("%g,%g,%g,%g", a[0], a[1], a[2], a[3])
}
