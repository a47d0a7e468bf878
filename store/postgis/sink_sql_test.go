package postgis

import (
	"slices"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/store"
)

func TestStagingColumns(t *testing.T) {
	cols := []store.Column{{Name: "Name", Property: "name"}, {Name: "n", Property: "n", Type: store.TypeBigint}}
	tests := []struct {
		name      string
		table     store.FeatureTable
		wantCols  string
		wantNames []string
	}{
		{name: "no properties", table: store.FeatureTable{Name: "a"},
			wantNames: []string{"gf_feature_id", "gf_payload_hash", "gf_wkb"}},
		{name: "properties are numbered text columns", table: store.FeatureTable{Name: "a", Columns: cols},
			wantCols: ", c0 text, c1 text", wantNames: []string{"gf_feature_id", "gf_payload_hash", "gf_wkb", "c0", "c1"}},
		{name: "mirror: gf_key last", table: store.FeatureTable{Name: "a", Columns: cols, Mode: store.ModeMirror},
			wantCols: ", c0 text, c1 text, gf_key text", wantNames: []string{"gf_feature_id", "gf_payload_hash", "gf_wkb", "c0", "c1", "gf_key"}},
		{name: "history is keyed too", table: store.FeatureTable{Name: "a", History: true},
			wantCols: ", gf_key text", wantNames: []string{"gf_feature_id", "gf_payload_hash", "gf_wkb", "gf_key"}},
		{name: "upsert is not keyed", table: store.FeatureTable{Name: "a", Mode: store.ModeUpsert, Key: []string{"n"}},
			wantNames: []string{"gf_feature_id", "gf_payload_hash", "gf_wkb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotCols, gotNames := stagingColumns(&tt.table)
			if gotCols != tt.wantCols || !slices.Equal(gotNames, tt.wantNames) {
				t.Errorf("stagingColumns = %q, %q; want %q, %q", gotCols, gotNames, tt.wantCols, tt.wantNames)
			}
		})
	}
}

func TestInsertColumns(t *testing.T) {
	tests := []struct {
		name        string
		table       store.FeatureTable
		wantCols    []string
		wantSelects []string
	}{
		{name: "no SRID, no properties", table: store.FeatureTable{Name: "a"},
			wantCols:    []string{"geom", "gf_feature_id", "gf_payload_hash", "gf_run_id", "gf_fetched_at"},
			wantSelects: []string{"ST_GeomFromWKB(gf_wkb)", "gf_feature_id", "gf_payload_hash", "$1::bigint", "now()"}},
		{name: "SRID and typed properties", table: store.FeatureTable{Name: "a", SRID: 25832, Columns: []store.Column{
			{Name: "Name", Property: "name"}, {Name: "n", Property: "n", Type: store.TypeBigint}}},
			wantCols:    []string{"geom", "gf_feature_id", "gf_payload_hash", "gf_run_id", "gf_fetched_at", `"Name"`, `"n"`},
			wantSelects: []string{"ST_GeomFromWKB(gf_wkb, 25832)", "gf_feature_id", "gf_payload_hash", "$1::bigint", "now()", "c0", "NULLIF(c1, '')::bigint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols, selects := insertColumns(&tt.table)
			if !slices.Equal(cols, tt.wantCols) || !slices.Equal(selects, tt.wantSelects) {
				t.Errorf("insertColumns = %q, %q; want %q, %q", cols, selects, tt.wantCols, tt.wantSelects)
			}
		})
	}
}

func TestUpsertSQL(t *testing.T) {
	tbl := &store.FeatureTable{Name: "roads", Mode: store.ModeUpsert, Key: []string{"id", "part"}, Columns: []store.Column{
		{Name: "part", Property: "part"}, {Name: "id", Property: "id"}}}
	cols, selects := insertColumns(tbl)
	sql := upsertSQL(tbl, "gf_stage_x", cols, selects)
	for _, want := range []string{
		`INSERT INTO "public"."roads" AS t`,
		// The key's staging columns in the key's order, not the table's.
		"SELECT DISTINCT ON (c1, c0)", "FROM gf_stage_x ORDER BY c1, c0",
		`ON CONFLICT ("id", "part") DO UPDATE SET geom = EXCLUDED.geom,`,
		`"part" = EXCLUDED."part"`,
		"WHERE t.gf_payload_hash IS DISTINCT FROM EXCLUDED.gf_payload_hash",
		"RETURNING (xmax = 0) AS inserted",
	} {
		if !strings.Contains(sql, want) {
			t.Errorf("upsertSQL lacks %q:\n%s", want, sql)
		}
	}
}
