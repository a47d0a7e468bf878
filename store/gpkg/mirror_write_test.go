package gpkg

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/store"
)

func TestKeyedWriteFor(t *testing.T) {
	h1, h2 := []byte{1}, []byte{2}
	tests := []struct {
		name    string
		found   bool
		stored  []byte
		history bool
		want    keyedWrite
	}{
		{name: "new key", want: keyedInsert},
		{name: "new key, history", history: true, want: keyedInsert},
		{name: "unchanged", found: true, stored: h1, want: keyedSkip},
		{name: "unchanged, history", found: true, stored: h1, history: true, want: keyedSkip},
		{name: "changed", found: true, stored: h2, want: keyedUpdate},
		{name: "changed, history", found: true, stored: h2, history: true, want: keyedNewVersion},
		{name: "stored without hash", found: true, want: keyedUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyedWriteFor(tt.found, tt.stored, h1, tt.history); got != tt.want {
				t.Errorf("keyedWriteFor = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLastOfEachKey(t *testing.T) {
	row := func(key string) featureRow { return featureRow{nil, key} }
	tests := []struct {
		name     string
		rows     []featureRow
		wantLast map[string]int
		wantKeys []string
	}{
		{name: "none", wantLast: map[string]int{}},
		{name: "distinct", rows: []featureRow{row("b"), row("a")}, wantLast: map[string]int{"b": 0, "a": 1}, wantKeys: []string{"b", "a"}},
		{name: "repeated: the last row, the first place",
			rows:     []featureRow{row("a"), row("b"), row("a"), row("c"), row("b")},
			wantLast: map[string]int{"a": 2, "b": 4, "c": 3}, wantKeys: []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last, keys := lastOfEachKey(tt.rows, 1)
			if !maps.Equal(last, tt.wantLast) || !slices.Equal(keys, tt.wantKeys) {
				t.Errorf("lastOfEachKey = %v, %q; want %v, %q", last, keys, tt.wantLast, tt.wantKeys)
			}
		})
	}
}

func TestKeyedSQL(t *testing.T) {
	cols := []string{`"geom"`, `"a"`}
	tests := []struct {
		name  string
		table store.FeatureTable
		want  keyedQueries
	}{
		{name: "mirror", table: store.FeatureTable{Name: "t", Mode: store.ModeMirror}, want: keyedQueries{
			look:   `SELECT fid, gf_payload_hash, gf_run_id IS ?2 FROM "t" WHERE gf_key = ?1`,
			insert: `INSERT INTO "t" ("geom", "a", "gf_key") VALUES (?, ?, ?)`,
			update: `UPDATE "t" SET "geom" = ?, "a" = ?, "gf_key" = ? WHERE fid = ?`,
			mirror: true,
		}},
		{name: "history", table: store.FeatureTable{Name: "t", History: true}, want: keyedQueries{
			look:    `SELECT fid, gf_payload_hash, gf_run_id IS ?2 FROM "t" WHERE gf_key = ?1 AND gf_valid_to IS NULL`,
			insert:  `INSERT INTO "t" ("geom", "a", "gf_key", "gf_valid_from") VALUES (?, ?, ?, ?)`,
			update:  `UPDATE "t" SET gf_valid_to = ?, gf_closed_run = ? WHERE fid = ?`,
			history: true,
		}},
		{name: "mirror with history", table: store.FeatureTable{Name: "t", Mode: store.ModeMirror, History: true}, want: keyedQueries{
			look:    `SELECT fid, gf_payload_hash, gf_run_id IS ?2 FROM "t" WHERE gf_key = ?1 AND gf_valid_to IS NULL`,
			insert:  `INSERT INTO "t" ("geom", "a", "gf_key", "gf_valid_from") VALUES (?, ?, ?, ?)`,
			update:  `UPDATE "t" SET gf_valid_to = ?, gf_closed_run = ? WHERE fid = ?`,
			history: true, mirror: true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := keyedSQL(&tt.table, "t", slices.Clip(slices.Clone(cols)))
			if got != tt.want {
				t.Errorf("keyedSQL =\n%+v\nwant\n%+v", got, tt.want)
			}
			want := []string{tt.want.look, tt.want.insert, tt.want.update, changeSQL, touchSQL}
			if tt.want.mirror {
				want = append(want, seenSQL)
			}
			if !slices.Equal(got.all(), want) {
				t.Errorf("all() = %q, want %q", got.all(), want)
			}
		})
	}
}

func TestWrittenVersion(t *testing.T) {
	tests := []struct {
		name    string
		history bool
		want    []string
	}{
		{name: "without history: the row while its payload is the run's", want: []string{"t.gf_payload_hash = c.payload_hash", "c.change <> 'deleted'"}},
		{name: "with history: the version the run opened or closed", history: true, want: []string{"t.gf_closed_run = c.run_id", "t.gf_run_id = c.run_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := writtenVersion(tt.history)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("writtenVersion(%v) lacks %q: %s", tt.history, w, got)
				}
			}
		})
	}
}

func TestChangeSRID(t *testing.T) {
	tests := []struct {
		name     string
		srid     int
		want     int
		toLonLat bool
	}{
		{name: "lon/lat", srid: 4326, want: 4326},
		{name: "Web Mercator", srid: 3857, want: 4326, toLonLat: true},
		{name: "Web Mercator's old code", srid: 900913, want: 4326, toLonLat: true},
		{name: "UTM to lon/lat", srid: 25832, want: 4326, toLonLat: true},
		{name: "LAEA Europe to lon/lat", srid: 3035, want: 4326, toLonLat: true},
		{name: "British National Grid as stored", srid: 27700, want: 27700},
		{name: "unknown", srid: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, toLonLat := changeSRID(tt.srid)
			if got != tt.want || toLonLat != tt.toLonLat {
				t.Errorf("changeSRID(%d) = %d, %v; want %d, %v", tt.srid, got, toLonLat, tt.want, tt.toLonLat)
			}
		})
	}
}
