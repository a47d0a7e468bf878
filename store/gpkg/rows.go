package gpkg

import (
	"database/sql"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// The rows of a feature table as the maps read them (VectorTile, ReadFeatures): one
// SELECT list and one scan for both.

// rowQuery is how a feature table's rows are selected: its SELECT list, by what the
// caller needs of them.
type rowQuery struct {
	t    store.StoredTable
	full bool // gf_fetched_at and, with history, a version's life: what ReadFeatures gives
	// bare (ReadFeatures' FeaturesOnly) selects the geometry, the feature id and the
	// property columns alone.
	bare bool
}

// columns is the SELECT list of the rows under alias t: geometry, payload hash, feature
// id, run, then (full) fetch time, then gf_key when keyed, then (full, with history)
// gf_valid_from, gf_valid_to, gf_closed_run, then the property columns; bare, the
// geometry, the feature id and the property columns. A date's or a
// time's text is read as stored (CAST), not as the time the driver would make of it
// (which tries its layouts one by one: slow, and not always the text's own).
func (q rowQuery) columns() string {
	cols := []string{"t.geom", "t.gf_payload_hash", "t.gf_feature_id", "t.gf_run_id"}
	if q.bare {
		cols = []string{"t.geom", "t.gf_feature_id"}
	}
	switch {
	case q.bare:
	case q.full:
		cols = append(cols, "CAST(t.gf_fetched_at AS TEXT)")
		if q.t.Keyed {
			cols = append(cols, "t.gf_key")
		}
		if q.t.History {
			cols = append(cols, "CAST(t.gf_valid_from AS TEXT)", "CAST(t.gf_valid_to AS TEXT)", "t.gf_closed_run")
		}
	case q.t.Keyed:
		cols = append(cols, "t.gf_key")
	}
	for _, c := range q.t.Columns {
		col := "t." + quote(c.Name)
		if isTimeType(c.Type) {
			col = "CAST(" + col + " AS TEXT)"
		}
		cols = append(cols, col)
	}
	return strings.Join(cols, ", ")
}

// isTimeType tells the declared types the driver turns into times.
func isTimeType(typ string) bool {
	switch strings.ToUpper(typ) {
	case "DATE", "DATETIME", "TIMESTAMP":
		return true
	}
	return false
}

// tableRow is one row read by rowQuery.
type tableRow struct {
	geom, hash []byte
	g          orb.Geometry // geom decoded, when the reader needs it
	featureID  sql.NullString
	runID      sql.NullInt64
	key        sql.NullString
	fetchedAt  time.Time
	validFrom  *time.Time
	validTo    *time.Time
	closedRun  sql.NullInt64
	props      []any
}

// scan reads the current row of rows into r.
func (q rowQuery) scan(rows *sql.Rows, r *tableRow) error {
	dest := []any{&r.geom, &r.hash, &r.featureID, &r.runID}
	if q.full {
		dest = append(dest, reqTime{&r.fetchedAt})
	}
	if q.t.Keyed {
		dest = append(dest, &r.key)
	}
	if q.full && q.t.History {
		dest = append(dest, nullTime{&r.validFrom}, nullTime{&r.validTo}, &r.closedRun)
	}
	r.props = make([]any, len(q.t.Columns))
	for i := range r.props {
		dest = append(dest, &r.props[i])
	}
	return rows.Scan(dest...)
}

// properties returns r's properties by column name, nulls left out, typed as SQLite
// gives them (int64, float64, string), BOOLEAN columns as bool.
func (q rowQuery) properties(r *tableRow) map[string]any {
	props := make(map[string]any, len(r.props)+3)
	for i, c := range q.t.Columns {
		if v := propertyValue(r.props[i], c.Type); v != nil {
			props[c.Name] = v
		}
	}
	return props
}

// propertyValue is a column's value as a property: nil for NULL, a bool for a BOOLEAN
// column's 0 or 1, text for bytes (a BLOB column, which geoflow never declares).
func propertyValue(v any, typ string) any {
	switch x := v.(type) {
	case int64:
		if strings.EqualFold(typ, "BOOLEAN") {
			return x != 0
		}
	case []byte:
		return string(x)
	case time.Time: // a time-typed column the caller did not declare as such
		return x.UTC().Format(timeFormat)
	}
	return v
}

// versionCond is the condition on the versions of a table's rows (alias t) that a read
// draws, and its arguments: with history the current versions, those current after run
// asOfRun (opened by it or before, not closed by then), or every version (all);
// without, every row.
func versionCond(history bool, asOfRun int64, all bool) (string, []any) {
	switch {
	case !history || all:
		return "TRUE", nil
	case asOfRun > 0:
		return "t.gf_run_id <= ? AND (t.gf_closed_run IS NULL OR t.gf_closed_run > ?)", []any{asOfRun, asOfRun}
	}
	return "t.gf_valid_to IS NULL", nil
}
