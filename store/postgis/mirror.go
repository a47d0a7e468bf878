package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/store"
)

// targetName is how the change log names a table: schema.table.
func targetName(t *store.FeatureTable) string {
	schema := t.Schema
	if schema == "" {
		schema = "public"
	}
	return schema + "." + t.Name
}

// currentView is the view of a history table's current versions: <table>_current.
func currentView(t *store.FeatureTable) string {
	schema := t.Schema
	if schema == "" {
		schema = "public"
	}
	name := t.Name + "_current"
	if len(name) > 63 {
		// Cut as the indexes are, with a hash of the whole name: never the table's own
		// name, nor another long table's view.
		sum := sha256.Sum256([]byte(name))
		name = name[:50] + "_" + hex.EncodeToString(sum[:4])
	}
	return pgx.Identifier{schema, name}.Sanitize()
}

// bookkeeping are the columns a feature's properties in the change log leave out.
const bookkeeping = `ARRAY['geom', 'gf_key', 'gf_feature_id', 'gf_payload_hash', 'gf_run_id', 'gf_fetched_at',
	'gf_valid_from', 'gf_valid_to', 'gf_closed_run']`

// writeKeyed writes the staged features of a keyed table (mirror mode, or history): rows
// keyed on gf_key, an unchanged feature costing no write, a changed one updated in place
// or, with history, its version closed and a new one inserted. What changed goes into the
// change log; a mirror table's unit also records the keys it saw.
func (u *unitTx) writeKeyed(ctx context.Context, t *store.FeatureTable, stage string, insertCols, selects []string, staged int64) (store.Counts, error) {
	target := tableIdent(t)
	what := fmt.Sprintf("writing into %s", target)
	var res store.Counts
	insertCols = append(insertCols, "gf_key")
	selects = append(selects, "gf_key")
	// DISTINCT ON and ORDER BY: a feature twice in one page (tile edges) is one row,
	// and units writing at once lock keys in one global order (no deadlock).
	rows := fmt.Sprintf(`SELECT DISTINCT ON (gf_key) %s FROM %s ORDER BY gf_key`, strings.Join(selects, ", "), stage)
	logChanges := `INSERT INTO geoflow_changes (run_id, task, target, gf_key, feature_id, change, payload_hash)
		SELECT $1, $2, $3, gf_key, gf_feature_id, CASE WHEN inserted THEN 'inserted' ELSE 'updated' END, gf_payload_hash FROM w
		ON CONFLICT (run_id, task, gf_key) DO UPDATE SET payload_hash = EXCLUDED.payload_hash, feature_id = EXCLUDED.feature_id`
	var sql string
	var args []any
	if t.History {
		// Close the current versions whose payload changed; then insert a version for
		// each feature without a current one (new, or just closed).
		tag, err := u.tx.Query(ctx, fmt.Sprintf(`WITH s AS (SELECT DISTINCT ON (gf_key) gf_key, gf_payload_hash FROM %s ORDER BY gf_key)
			UPDATE %s t SET gf_valid_to = now(), gf_closed_run = $1
			FROM s WHERE t.gf_key = s.gf_key AND t.gf_valid_to IS NULL AND t.gf_payload_hash <> s.gf_payload_hash
			RETURNING t.gf_key`, stage, target), u.ref.RunID)
		if err != nil {
			return res, translate(what, err)
		}
		closed, err := pgx.CollectRows(tag, pgx.RowTo[string])
		if err != nil {
			return res, translate(what, err)
		}
		if closed == nil {
			closed = []string{} // = ANY (NULL) would count a new version as neither
		}
		sql = fmt.Sprintf(`WITH w AS (INSERT INTO %s AS t (%s) %s ON CONFLICT (gf_key) WHERE gf_valid_to IS NULL DO NOTHING
				RETURNING gf_key, gf_feature_id, gf_payload_hash, NOT (gf_key = ANY ($4::text[])) AS inserted),
			c AS (%s)
			SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM w`,
			target, strings.Join(insertCols, ", "), rows, logChanges)
		args = []any{u.ref.RunID, u.ref.TaskID, targetName(t), closed}
	} else {
		sets := make([]string, len(insertCols))
		for i, c := range insertCols {
			sets[i] = fmt.Sprintf("%s = EXCLUDED.%s", c, c)
		}
		sql = fmt.Sprintf(`WITH w AS (INSERT INTO %s AS t (%s) %s
				ON CONFLICT (gf_key) DO UPDATE SET %s WHERE t.gf_payload_hash IS DISTINCT FROM EXCLUDED.gf_payload_hash
				RETURNING gf_key, gf_feature_id, gf_payload_hash, (xmax = 0) AS inserted),
			c AS (%s)
			SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM w`,
			target, strings.Join(insertCols, ", "), rows, strings.Join(sets, ", "), logChanges)
		args = []any{u.ref.RunID, u.ref.TaskID, targetName(t)}
	}
	if err := u.tx.QueryRow(ctx, sql, args...).Scan(&res.Inserted, &res.Updated); err != nil {
		return res, translate(what, err)
	}
	res.Skipped = staged - res.Inserted - res.Updated
	var err error
	res.Overlap, err = u.keyedSeen(ctx, t, stage, target, res)
	return res, err
}

// keyedSeen records the keys a mirror table's unit saw, and counts the overlaps of a
// keyed table's unit whose write res skipped features (store.Counts.Overlap): for a
// mirror, in the statement that records the keys, so no statement more.
func (u *unitTx) keyedSeen(ctx context.Context, t *store.FeatureTable, stage, target string, res store.Counts) (int64, error) {
	on := "t.gf_key = s.gf_key"
	if t.History {
		on += " AND t.gf_valid_to IS NULL"
	}
	var matches int64
	if t.Mode == store.ModeMirror {
		// Keys appended: a unit may write more than once in its transaction.
		count := fmt.Sprintf("CASE WHEN $4 THEN (%s) ELSE 0 END", overlapSQL(stage, target, on))
		err := u.tx.QueryRow(ctx, fmt.Sprintf(`WITH seen AS (INSERT INTO geoflow_seen (run_id, task, unit, keys)
			SELECT $1, $2, $3, array_agg(DISTINCT gf_key) FROM %s HAVING count(*) > 0
			ON CONFLICT (run_id, task, unit) DO UPDATE SET keys = geoflow_seen.keys || EXCLUDED.keys)
			SELECT %s`, stage, count),
			u.ref.RunID, u.ref.TaskID, u.ref.Key, res.Skipped > 0).Scan(&matches)
		if err != nil {
			return 0, translate(fmt.Sprintf("recording the features unit %s saw", u.ref.Key), err)
		}
	} else if res.Skipped > 0 {
		if err := u.tx.QueryRow(ctx, overlapSQL(stage, target, on), u.ref.RunID).Scan(&matches); err != nil {
			return 0, translate(fmt.Sprintf("counting the features of %s this run stored already", target), err)
		}
	}
	return overlapOf(matches, res.Inserted+res.Updated, res.Skipped), nil
}

// SeenFeatures implements store.Mirrors.
func (s *Store) SeenFeatures(ctx context.Context, t *store.FeatureTable, runID int64, task string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(DISTINCT k) FROM geoflow_seen, unnest(keys) k WHERE run_id = $1 AND task = $2`,
		runID, task).Scan(&n)
	return n, translate(fmt.Sprintf("counting the features task %q saw", task), err)
}

// LaterRun implements store.Mirrors.
func (s *Store) LaterRun(ctx context.Context, flow, task string, runID int64) (int64, error) {
	var later *int64
	err := s.pool.QueryRow(ctx, `SELECT max(t.run_id) FROM geoflow_run_tasks t JOIN geoflow_runs r ON r.id = t.run_id
		WHERE r.flow = $1 AND t.task = $2 AND t.run_id > $3 AND t.state NOT IN ('pending', 'upstream_failed')`,
		flow, task, runID).Scan(&later)
	if err != nil || later == nil {
		return 0, translate(fmt.Sprintf("looking for a run of task %q after run %d", task, runID), err)
	}
	return *later, nil
}

// lonlatGeom is alias's geometry in lon/lat, where the area is a box (in a projected CRS
// its edges are curves).
func lonlatGeom(t *store.FeatureTable, alias string) string {
	switch {
	case t.SRID == 0:
		return "ST_SetSRID(" + alias + ".geom, 4326)"
	case t.SRID != 4326:
		return "ST_Transform(" + alias + ".geom, 4326)"
	}
	return alias + ".geom"
}

// currentCond selects the current rows of t written by run or before.
func currentCond(t *store.FeatureTable, run int64) string {
	c := fmt.Sprintf("t.gf_run_id <= %d", run)
	if t.History {
		c += " AND t.gf_valid_to IS NULL"
	}
	return c
}

// UnseenFeatures implements store.Mirrors.
func (s *Store) UnseenFeatures(ctx context.Context, t *store.FeatureTable, q store.UnseenQuery) (store.Unseen, error) {
	var res store.Unseen
	target := tableIdent(t)
	what := fmt.Sprintf("listing the features of %s run %d did not see", target, q.RunID)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, translate(what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// With a key: a table just filled has no statistics yet, and the planner, taking it
	// for nearly empty, may probe the seen keys once per row; indexed, that is cheap.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE gf_seen_keys (k text PRIMARY KEY) ON COMMIT DROP`); err != nil {
		return res, translate(what, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO gf_seen_keys SELECT DISTINCT k FROM geoflow_seen, unnest(keys) k
		WHERE run_id = $1 AND task = $2`, q.RunID, q.Task); err != nil {
		return res, translate(what, err)
	}
	if _, err := tx.Exec(ctx, `ANALYZE gf_seen_keys`); err != nil {
		return res, translate(what, err)
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) } // exact literals
	a := q.Area
	env := fmt.Sprintf("ST_MakeEnvelope(%s, %s, %s, %s, 4326)", num(a.Min[0]), num(a.Min[1]), num(a.Max[0]), num(a.Max[1]))
	rel := "ST_Intersects"
	if q.Partial {
		rel = "ST_CoveredBy"
	}
	// The area's rows by their boxes (the GiST index); the exact test runs on the few
	// absent ones only.
	inBox := currentCond(t, q.RunID) + " AND " + lonlatGeom(t, "t") + " && " + env
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s t WHERE %s`, target, inBox)).Scan(&res.Current); err != nil {
		return res, translate(what, err)
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT c.gf_key, coalesce(c.gf_feature_id, '') FROM (SELECT t.gf_key, t.gf_feature_id, t.geom FROM %s t WHERE %s
		AND NOT EXISTS (SELECT 1 FROM gf_seen_keys s WHERE s.k = t.gf_key) OFFSET 0) c WHERE %s(%s, %s) ORDER BY c.gf_key`,
		target, inBox, rel, lonlatGeom(t, "c"), env))
	if err != nil {
		return res, translate(what, err)
	}
	res.Features, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.UnseenFeature, error) {
		var f store.UnseenFeature
		return f, r.Scan(&f.Key, &f.FeatureID)
	})
	return res, translate(what, err)
}

// DeleteFeatures implements store.Mirrors.
func (s *Store) DeleteFeatures(ctx context.Context, t *store.FeatureTable, d store.DeleteKeys) (int64, error) {
	if len(d.Keys) == 0 {
		return 0, nil
	}
	target := tableIdent(t)
	what := fmt.Sprintf("deleting %d features from %s for run %d", len(d.Keys), target, d.RunID)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, translate(what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	cond := currentCond(t, d.RunID) + " AND t.gf_key = ANY ($4::text[])"
	var sql string
	if t.History {
		sql = fmt.Sprintf(`WITH d AS (UPDATE %s t SET gf_valid_to = now(), gf_closed_run = $1 WHERE %s
				RETURNING gf_key, gf_feature_id, gf_payload_hash)
			INSERT INTO geoflow_changes (run_id, task, target, gf_key, feature_id, change, payload_hash)
			SELECT $1, $2, $3, gf_key, gf_feature_id, 'deleted', gf_payload_hash FROM d
			ON CONFLICT (run_id, task, gf_key) DO UPDATE SET change = 'deleted', payload_hash = EXCLUDED.payload_hash`, target, cond)
	} else {
		sql = fmt.Sprintf(`WITH d AS (DELETE FROM %s t WHERE %s
				RETURNING gf_key, gf_feature_id, gf_payload_hash, geom, to_jsonb(t) - %s - '%s'::text AS props)
			INSERT INTO geoflow_changes (run_id, task, target, gf_key, feature_id, change, payload_hash, geom, properties)
			SELECT $1, $2, $3, gf_key, gf_feature_id, 'deleted', gf_payload_hash, ST_AsEWKB(geom), props FROM d
			ON CONFLICT (run_id, task, gf_key) DO UPDATE SET change = 'deleted', payload_hash = EXCLUDED.payload_hash,
				geom = EXCLUDED.geom, properties = EXCLUDED.properties`, target, cond, bookkeeping, fidColumn(t))
	}
	tag, err := tx.Exec(ctx, sql, d.RunID, d.Task, targetName(t), d.Keys)
	if err != nil {
		return 0, translate(what, err)
	}
	n := tag.RowsAffected()
	if _, err := tx.Exec(ctx, `UPDATE geoflow_run_tasks SET features_deleted = features_deleted + $3 WHERE run_id = $1 AND task = $2`,
		d.RunID, d.Task, n); err != nil {
		return 0, translate(what, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM geoflow_absent WHERE target = $1 AND gf_key = ANY ($2::text[])`, targetName(t), d.Keys); err != nil {
		return 0, translate(what, err)
	}
	if n > 0 {
		if err := bumpStamps(ctx, tx, []string{targetName(t)}); err != nil {
			return 0, translate(what, err)
		}
	}
	return n, translate(what, tx.Commit(ctx))
}

// WriteConfirmed implements store.Mirrors, through a unit transaction like any unit's.
func (s *Store) WriteConfirmed(ctx context.Context, ref store.UnitRef, t *store.FeatureTable, src store.FeatureSource) (store.Counts, error) {
	start := time.Now()
	utx, err := s.BeginUnit(ctx, ref)
	if err != nil {
		return store.Counts{}, err
	}
	u := utx.(*unitTx)
	defer u.Rollback(ctx)
	if err := addUnits(ctx, u.tx, ref.RunID, ref.TaskID, []store.Unit{{Key: ref.Key}}); err != nil {
		return store.Counts{}, translate(fmt.Sprintf("recording unit %s", ref.Key), err)
	}
	c, err := u.WriteFeatures(ctx, t, src)
	if err != nil {
		return c, err
	}
	if err := u.Complete(ctx, c, nil, nil, start); err != nil {
		return c, err
	}
	return c, u.Commit(ctx)
}

// NoteAbsent implements store.Mirrors.
func (s *Store) NoteAbsent(ctx context.Context, t *store.FeatureTable, a store.Absence) (map[string]int, error) {
	what := fmt.Sprintf("counting the runs features of %s were absent from", targetName(t))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, translate(what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `DELETE FROM geoflow_absent WHERE flow = $1 AND task = $2 AND target = $3
		AND EXISTS (SELECT 1 FROM geoflow_absent WHERE flow = $1 AND task = $2 AND target = $3)
		AND gf_key IN (SELECT k FROM geoflow_seen, unnest(keys) k WHERE run_id = $4 AND task = $2)`,
		a.Flow, a.Task, targetName(t), a.RunID); err != nil {
		return nil, translate(what, err)
	}
	out := make(map[string]int, len(a.Keys))
	if len(a.Keys) > 0 {
		rows, err := tx.Query(ctx, `INSERT INTO geoflow_absent AS a (flow, task, target, gf_key, runs, last_run)
			SELECT $1, $2, $3, k, 1, $4 FROM unnest($5::text[]) k
			ON CONFLICT (flow, task, target, gf_key) DO UPDATE
				SET runs = a.runs + CASE WHEN a.last_run < EXCLUDED.last_run THEN 1 ELSE 0 END,
				last_run = greatest(a.last_run, EXCLUDED.last_run)
			RETURNING gf_key, runs`, a.Flow, a.Task, targetName(t), a.RunID, a.Keys)
		if err != nil {
			return nil, translate(what, err)
		}
		var k string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { out[k] = n; return nil }); err != nil {
			return nil, translate(what, err)
		}
	}
	return out, translate(what, tx.Commit(ctx))
}

// dropSeen forgets the seen keys of the flow's task recorded by runs before run.
func dropSeen(ctx context.Context, q querier, flow, task string, before int64) error {
	_, err := q.Exec(ctx, `DELETE FROM geoflow_seen WHERE task = $2 AND run_id < $1
		AND run_id IN (SELECT id FROM geoflow_runs WHERE flow = $3)`, before, task, flow)
	return err
}

// ForgetSeen implements store.Mirrors.
func (s *Store) ForgetSeen(ctx context.Context, flow, task string, before int64) error {
	return translate(fmt.Sprintf("forgetting the features earlier runs of task %q saw", task), dropSeen(ctx, s.pool, flow, task, before))
}

// NoteChanges implements store.Mirrors.
func (s *Store) NoteChanges(ctx context.Context, runID int64, task string, c store.TaskChanges) error {
	_, err := s.pool.Exec(ctx, `UPDATE geoflow_run_tasks t SET mirror_note = nullif($3, ''),
		versions_closed = CASE WHEN $4 THEN features_deleted + u.upd ELSE 0 END,
		features_unchanged = CASE WHEN $5 >= 0 THEN greatest($5 - u.ins - u.upd, 0) END
		FROM (SELECT coalesce(sum(features_inserted), 0) AS ins, coalesce(sum(features_updated), 0) AS upd
			FROM geoflow_units WHERE run_id = $1 AND task = $2) u
		WHERE t.run_id = $1 AND t.task = $2`, runID, task, c.Note, c.History, c.Seen)
	return translate(fmt.Sprintf("recording what task %q changed", task), err)
}

// ListChanges implements store.Changes.
func (s *Store) ListChanges(ctx context.Context, f store.ChangeFilter, fn func(store.Change) error) error {
	what := fmt.Sprintf("reading the changes of run %d", f.RunID)
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT target FROM geoflow_changes WHERE run_id = $1 AND ($2 = '' OR task = $2) ORDER BY 1`,
		f.RunID, f.Task)
	if err != nil {
		return translate(what, err)
	}
	targets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate(what, err)
	}
	for _, tn := range targets {
		if err := s.listChanges(ctx, f, tn, fn); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) listChanges(ctx context.Context, f store.ChangeFilter, tn string, fn func(store.Change) error) error {
	what := fmt.Sprintf("reading the changes of run %d to %s", f.RunID, tn)
	order := ` ORDER BY c.task, CASE c.change WHEN 'inserted' THEN 0 WHEN 'updated' THEN 1 ELSE 2 END, c.gf_key`
	if !f.Features {
		rows, err := s.pool.Query(ctx, `SELECT c.task, c.gf_key, coalesce(c.feature_id, ''), c.change FROM geoflow_changes c
			WHERE c.run_id = $1 AND c.target = $2 AND ($3 = '' OR c.task = $3)`+order, f.RunID, tn, f.Task)
		if err != nil {
			return translate(what, err)
		}
		ch := store.Change{RunID: f.RunID, Table: tn}
		_, err = pgx.ForEachRow(rows, []any{&ch.Task, &ch.Key, &ch.FeatureID, &ch.Kind}, func() error { return fn(ch) })
		return translateKeep(what, err)
	}
	schema, name, _ := strings.Cut(tn, ".")
	ident := pgx.Identifier{schema, name}.Sanitize()
	var history, exists bool
	var ids []string // the table's identity columns (fid), not a feature's properties
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = $2 AND table_name = $3 AND column_name = 'gf_valid_to'),
		coalesce((SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attidentity <> ''), '{}')`,
		ident, schema, name).Scan(&exists, &history, &ids); err != nil {
		return translate(what, err)
	}
	if !exists {
		return fmt.Errorf("%s: the table no longer exists", what)
	}
	// The version the run wrote: with history the one it opened (or, deleted, closed);
	// without, the row as it is if its payload is still the one the run wrote, and a
	// deleted row's copy from the log.
	join := "t.gf_key = c.gf_key AND t.gf_payload_hash = c.payload_hash AND c.change <> 'deleted'"
	if history {
		join = `t.gf_key = c.gf_key AND CASE WHEN c.change = 'deleted' THEN t.gf_closed_run = c.run_id
			ELSE t.gf_run_id = c.run_id AND t.gf_payload_hash = c.payload_hash END`
	}
	geom := "coalesce(ST_GeomFromEWKB(c.geom), t.geom)"
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT c.task, c.gf_key, coalesce(c.feature_id, ''), c.change,
			ST_AsBinary(CASE WHEN ST_SRID(%[1]s) > 0 AND ST_SRID(%[1]s) <> 4326 THEN ST_Transform(%[1]s, 4326) ELSE %[1]s END),
			coalesce(c.properties, to_jsonb(t) - %[2]s - $4::text[]), t.gf_key IS NULL AND c.properties IS NULL
		FROM geoflow_changes c LEFT JOIN %[3]s t ON %[4]s
		WHERE c.run_id = $1 AND c.target = $2 AND ($3 = '' OR c.task = $3)`, geom, bookkeeping, ident, join)+order, f.RunID, tn, f.Task, ids)
	if err != nil {
		return translate(what, err)
	}
	var g []byte
	var props []byte
	ch := store.Change{RunID: f.RunID, Table: tn}
	_, err = pgx.ForEachRow(rows, []any{&ch.Task, &ch.Key, &ch.FeatureID, &ch.Kind, &g, &props, &ch.Superseded}, func() error {
		c := ch
		c.Geometry, c.Properties, c.SRID = nil, nil, 4326
		if len(g) > 0 {
			geom, err := wkb.Unmarshal(g)
			if err != nil {
				return fmt.Errorf("feature %q: decoding its geometry: %w", c.Key, err)
			}
			c.Geometry = geom
		}
		if len(props) > 0 {
			if err := json.Unmarshal(props, &c.Properties); err != nil {
				return fmt.Errorf("feature %q: decoding its properties: %w", c.Key, err)
			}
		}
		return fn(c)
	})
	return translateKeep(what, err)
}

// translateKeep translates a database error and passes fn's own errors through.
func translateKeep(what string, err error) error {
	var pgErr interface{ SQLState() string }
	if err == nil || errors.As(err, &pgErr) {
		return translate(what, err)
	}
	return err
}
