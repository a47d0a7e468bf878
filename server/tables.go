package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// writer is the task of a flow that writes a stored table, as the catalog says.
type writer struct {
	Flow, Task string
	// Mode is how the task writes it: append, upsert, mirror, "mirror with history",
	// or tiles.
	Mode string
}

// targetOf is the [schema.]table task t writes and how, ok false when it writes none
// the UI shows (tile files are shown as the flow's basemap instead).
func targetOf(t *flows.Task) (table, mode string, ok bool) {
	switch c := t.Config.(type) {
	case interface{ FeatureTarget() *tasks.FeatureTarget }:
		ft := c.FeatureTarget()
		mode = string(ft.Mode)
		if mode == "" {
			mode = string(store.ModeAppend)
		}
		if ft.History {
			mode += " with history"
		}
		return ft.Table, mode, true
	case interface{ PyramidTable() (string, bool) }:
		table, ok := c.PyramidTable()
		return table, "tiles", ok
	}
	return "", "", false
}

// sameTable tells whether a flow's target.table names stored table t. A GeoPackage has
// one namespace: a schema other than public is a prefix of the name there.
func sameTable(target string, t store.StoredTable) bool {
	schema, name, err := store.SplitTable(target)
	if err != nil {
		return false
	}
	if t.Schema == "main" {
		if schema != "public" {
			name = schema + "_" + name
		}
		return name == t.Name
	}
	return schema == t.Schema && name == t.Name
}

// writers finds, for each of ts, the flow task that writes it in the catalog (the first
// one by flow name; a table no flow of the directory names has none).
func (h *handler) writers(ts []store.StoredTable) []writer {
	out := make([]writer, len(ts))
	if h.o.Catalog == nil {
		return out
	}
	infos, err := h.o.Catalog.List(0)
	if err != nil {
		h.log.Warn("listing the flows", "err", err)
		return out
	}
	for _, fi := range infos {
		if fi.Problem != "" || fi.Name == "" {
			continue
		}
		f, err := h.o.Catalog.Load(fi.Name)
		if err != nil {
			continue
		}
		for _, task := range f.Tasks {
			table, mode, ok := targetOf(task)
			if !ok {
				continue
			}
			for i, t := range ts {
				if out[i].Flow == "" && sameTable(table, t) {
					out[i] = writer{Flow: f.Name, Task: task.ID, Mode: mode}
				}
			}
		}
	}
	return out
}

// tableRow is one line of /tables.
type tableRow struct {
	Ref   string
	Table store.StoredTable
	writer
	LastRun *store.RunRecord
}

// lastRuns fills each row's last run of its flow.
func (h *handler) lastRuns(r *http.Request, rows []tableRow) error {
	seen := map[string]*store.RunRecord{}
	for i := range rows {
		f := rows[i].Flow
		if f == "" {
			continue
		}
		if last, ok := seen[f]; ok {
			rows[i].LastRun = last
			continue
		}
		runs, err := h.o.Store.ListRuns(r.Context(), store.RunFilter{Flow: f, Limit: 1})
		if err != nil {
			return err
		}
		if len(runs) > 0 {
			seen[f] = &runs[0]
		} else {
			seen[f] = nil
		}
		rows[i].LastRun = seen[f]
	}
	return nil
}

func (h *handler) tablesPage(w http.ResponseWriter, r *http.Request) {
	ts, err := h.o.Store.StoredTables(r.Context())
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	ws := h.writers(ts)
	rows := make([]tableRow, len(ts))
	for i, t := range ts {
		rows[i] = tableRow{Ref: tableRef(t), Table: t, writer: ws[i]}
	}
	if err := h.lastRuns(r, rows); err != nil {
		h.failPage(w, r, err)
		return
	}
	data := struct {
		page
		Tables []tableRow
	}{page: h.page(r, "Tables", "tables"), Tables: rows}
	h.render(w, r, http.StatusOK, "tables", "layout", data)
}

func (h *handler) tablePage(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("table")
	t, err := h.table(r, ref)
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r)
		return
	}
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	row := tableRow{Ref: tableRef(t), Table: t, writer: h.writers([]store.StoredTable{t})[0]}
	rows := []tableRow{row}
	if err := h.lastRuns(r, rows); err != nil {
		h.failPage(w, r, err)
		return
	}
	data := struct {
		page
		tableRow
		Runs     []store.RunRecord
		AsOf     int64
		UnitsURL string
	}{page: h.page(r, "Table "+row.Ref, "table"), tableRow: rows[0]}
	data.AsOf, _ = asOfParam(r)
	if row.Flow != "" {
		data.Basemap = h.flowBasemap(r.Context(), row.Flow)
		if t.History {
			if data.Runs, err = h.o.Store.ListRuns(r.Context(), store.RunFilter{Flow: row.Flow, Limit: 100}); err != nil {
				h.failPage(w, r, err)
				return
			}
		}
		if last := rows[0].LastRun; last != nil {
			data.UnitsURL = "/api/runs/" + strconv.FormatInt(last.ID, 10) + "/units?task=" + row.Task
		}
	}
	if data.Basemap == nil {
		data.Basemap = h.userBasemap()
	}
	h.render(w, r, http.StatusOK, "table", "layout", data)
}

// Extent is the table's extent as "w, s, e, n" to 6 decimals, "" when it has none.
func (row tableRow) Extent() string {
	b := row.Table.Extent
	if b == nil {
		return ""
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	return strings.Join([]string{f(b.Min[0]), f(b.Min[1]), f(b.Max[0]), f(b.Max[1])}, ", ")
}

// ExtentJSON is the extent as a JSON array for the map, "" when it has none.
func (row tableRow) ExtentJSON() string {
	if row.Table.Extent == nil {
		return ""
	}
	return "[" + strings.ReplaceAll(row.Extent(), " ", "") + "]"
}
