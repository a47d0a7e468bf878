package postgis

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

func TestNextThreshold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a     tileAttempt
		round int
		want  thinVerdict
	}{
		{"fits", tileAttempt{threshold: 65536, features: 50, bytes: 1000}, 1, thinVerdict{keep: true}},
		{"thinned and fits", tileAttempt{threshold: 100, features: 50, bytes: 1000}, 3, thinVerdict{keep: true}},
		{"too many features", tileAttempt{threshold: 65536, features: 51, overflow: true, bytes: 1000}, 1, thinVerdict{next: 32768}},
		{"too many bytes, a little", tileAttempt{threshold: 1000, features: 40, bytes: 2100}, 1, thinVerdict{next: 500}},
		{"too many bytes, by far", tileAttempt{threshold: 1000, features: 40, bytes: 20000}, 1, thinVerdict{next: 90}},
		{"both", tileAttempt{threshold: 1000, features: 51, overflow: true, bytes: 20000}, 1, thinVerdict{next: 500}},
		{"rounds spent, features", tileAttempt{threshold: 4096, features: 51, overflow: true, bytes: 100}, maxThinRounds, thinVerdict{atLast: 50}},
		{"rounds spent, bytes", tileAttempt{threshold: 4096, features: 40, bytes: 4000}, maxThinRounds, thinVerdict{atLast: 18}},
		{"threshold spent", tileAttempt{threshold: 1, features: 51, overflow: true}, 2, thinVerdict{atLast: 50}},
		{"one feature too big", tileAttempt{threshold: 1, features: 1, bytes: 1 << 30}, 2, thinVerdict{atLast: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextThreshold(tc.a, 50, 2000, tc.round); got != tc.want {
				t.Errorf("nextThreshold(%+v, round %d) = %+v, want %+v", tc.a, tc.round, got, tc.want)
			}
		})
	}
}

func TestThresholdBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hash      []byte
		threshold int
		below     bool
	}{
		{"zero", []byte{0, 0, 0}, 1, true},
		{"just below", []byte{0x12, 0x33, 0xff, 0xff}, 0x1234, true},
		{"equal prefix", []byte{0x12, 0x34, 0, 0}, 0x1234, false},
		{"above", []byte{0x12, 0x35}, 0x1234, false},
		{"top", bytes.Repeat([]byte{0xff}, 32), 0xffff, false},
		{"below top", append([]byte{0xff, 0xfe}, bytes.Repeat([]byte{0xff}, 30)...), 0xffff, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			below := bytes.Compare(tc.hash, thresholdBytes(tc.threshold)) < 0
			if prefix := int(tc.hash[0])<<8 | int(tc.hash[1]); (prefix < tc.threshold) != tc.below || below != tc.below {
				t.Errorf("%x below %#x: %v as bytes, want %v", tc.hash, tc.threshold, below, tc.below)
			}
		})
	}
}

func TestPropertySQL(t *testing.T) {
	for _, tc := range []struct {
		name, typ, want string
	}{
		{"text", "text", `t."c"`},
		{"varchar", "character varying(20)", `t."c"`},
		{"bigint", "bigint", `t."c"`},
		{"integer", "integer", `t."c"::bigint`},
		{"numeric", "numeric(10,2)", `t."c"::double precision`},
		{"boolean", "boolean", `t."c"`},
		{"date", "date", `to_char(t."c", 'YYYY-MM-DD')`},
		{"timestamptz", "timestamp(3) with time zone",
			`rtrim(rtrim(to_char(t."c" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z'`},
		{"jsonb", "jsonb", `t."c"::text`},
		{"array", "text[]", `t."c"::text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := propertySQL("t", store.StoredColumn{Name: "c", Type: tc.typ}); got != tc.want {
				t.Errorf("propertySQL(%q) = %s, want %s", tc.typ, got, tc.want)
			}
		})
	}
}

// TestStampKinds: the Stamp of a table whose version geoflow does not keep (rows written
// by others, or by a geoflow before the version) follows every insert, update and
// deletion as well, and a table dropped and created again has another stamp though its
// version row is the same.
func TestStampKinds(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	table := &store.FeatureTable{Name: "others", SRID: 4326, Columns: []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	stamp := func() (string, int64) {
		t.Helper()
		st, err := s.StoredTable(ctx, "", "others")
		if err != nil {
			t.Fatal(err)
		}
		return st.Stamp, st.Rows
	}
	last, _ := stamp()
	for _, tc := range []struct {
		name, sql string
		rows      int64
	}{
		{"an insert", `INSERT INTO others (v, geom, gf_payload_hash) VALUES ('a', 'SRID=4326;POINT(1 1)', '\x01'), ('b', 'SRID=4326;POINT(2 2)', '\x02')`, 2},
		{"an update", `UPDATE others SET v = 'c' WHERE v = 'b'`, 2},
		{"a deletion", `DELETE FROM others WHERE v = 'a'`, 1},
		{"a version kept", `INSERT INTO geoflow_table_stamps VALUES ('public.others', 1)`, 1},
		{"the table created again", `DROP TABLE others; CREATE TABLE public.others (v text, geom geometry(Geometry, 4326), gf_payload_hash bytea NOT NULL)`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.pool.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			got, rows := stamp()
			if got == last || rows != tc.rows {
				t.Errorf("after %s: Stamp %q (before %q), Rows %d; want another stamp and %d rows", tc.name, got, last, rows, tc.rows)
			}
			if again, _ := stamp(); again != got {
				t.Errorf("Stamp %q, then %q with nothing written", got, again)
			}
			last = got
		})
	}
}

// TestVectorTileCRS: a table in Web Mercator, in UTM (EPSG:25832) and one without SRID
// (taken as lon/lat) draw a point where Web Mercator puts it, and only in its tile; and
// ReadFeatures gives it back in lon/lat.
func TestVectorTileCRS(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p := orb.Point{11.5, 48.1}
	tile := maptile.At(p, 14)
	frac := maptile.Fraction(p, 14)
	want := orb.Point{(frac[0] - float64(tile.X)) * 4096, (frac[1] - float64(tile.Y)) * 4096}
	for _, tc := range []struct {
		name string
		srid int
	}{{"mercator", 3857}, {"utm", 25832}, {"nosrid", 0}, {"lonlat", 4326}} {
		t.Run(tc.name, func(t *testing.T) {
			table := &store.FeatureTable{Name: tc.name, SRID: tc.srid, Columns: []store.Column{{Name: "v", Property: "v", Type: store.TypeText}}}
			if err := s.EnsureFeatureTable(ctx, table); err != nil {
				t.Fatal(err)
			}
			geom, args := "ST_Transform(ST_SetSRID(ST_MakePoint($1, $2), 4326), $3::int)", []any{p[0], p[1], tc.srid}
			if tc.srid == 0 {
				geom, args = "ST_MakePoint($1, $2)", args[:2]
			}
			if _, err := s.pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (v, geom, gf_payload_hash, gf_run_id) VALUES ('here', %s, '\x0102030405060708', 1)`,
				pgx.Identifier{tc.name}.Sanitize(), geom), args...); err != nil {
				t.Fatal(err)
			}
			st, err := s.StoredTable(ctx, "", tc.name)
			if err != nil || st.SRID != tc.srid || st.Extent == nil || math.Abs(st.Extent.Min[0]-p[0]) > 1e-9 || math.Abs(st.Extent.Min[1]-p[1]) > 1e-9 {
				t.Fatalf("StoredTable = %+v, %v; want SRID %d and the point's extent", st, err, tc.srid)
			}
			for _, tl := range []maptile.Tile{tile, maptile.New(tile.X+1, tile.Y, 14)} {
				vt, err := s.VectorTile(ctx, st, store.TileQuery{Z: 14, X: int(tl.X), Y: int(tl.Y)})
				if err != nil {
					t.Fatal(err)
				}
				layers, err := mvt.Unmarshal(vt.Data)
				if tl != tile {
					if len(vt.Data) != 0 {
						t.Errorf("the neighbouring tile holds %d bytes, want none", len(vt.Data))
					}
					continue
				}
				if err != nil || len(layers) != 1 || len(layers[0].Features) != 1 {
					t.Fatalf("the tile: %v, %v; want one feature", layers, err)
				}
				f := layers[0].Features[0]
				if g, ok := f.Geometry.(orb.Point); !ok || math.Abs(g[0]-want[0]) > 1 || math.Abs(g[1]-want[1]) > 1 || f.ID != float64(0x010203040506) {
					t.Errorf("drawn %v, id %v; want within a unit of %v, id %d", f.Geometry, f.ID, want, 0x010203040506)
				}
			}
			// Zoomed out, every tile answers: the one holding the point draws it, the
			// others (half a world from a UTM zone's meridian too) are empty.
			for z := range 3 {
				for x := range 1 << z {
					for y := range 1 << z {
						vt, err := s.VectorTile(ctx, st, store.TileQuery{Z: z, X: x, Y: y})
						holds := maptile.At(p, maptile.Zoom(z)) == maptile.New(uint32(x), uint32(y), maptile.Zoom(z))
						if err != nil || (vt.Features == 1) != holds {
							t.Errorf("tile %d/%d/%d: %d features, %v; want the point: %v", z, x, y, vt.Features, err, holds)
						}
					}
				}
			}
			err = s.ReadFeatures(ctx, st, store.FeatureQuery{BBox: &orb.Bound{Min: orb.Point{11.49, 48.09}, Max: orb.Point{11.51, 48.11}}},
				func(f *store.StoredFeature) error {
					if g, ok := f.Geometry.(orb.Point); !ok || math.Abs(g[0]-p[0]) > 1e-9 || math.Abs(g[1]-p[1]) > 1e-9 || f.Properties["v"] != "here" {
						t.Errorf("read %v %v, want %v in lon/lat", f.Geometry, f.Properties, p)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
