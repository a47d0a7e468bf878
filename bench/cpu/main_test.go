package main

import "testing"

func TestStageOf(t *testing.T) {
	const g = "github.com/geoflow/geoflow/"
	sys := frame{"internal/runtime/syscall/linux.Syscall6", "/go/src/internal/runtime/syscall/linux/syscall_linux.go"}
	tests := []struct {
		name  string
		stack []frame // leaf first
		want  string
		by    string
	}{
		{"a socket write belongs to pgconn above it", []frame{sys, {"net.(*conn).Write", "net.go"},
			{"github.com/jackc/pgx/v5/pgconn.(*PgConn).CopyFrom", "pgconn.go"}}, stWrite, "github.com/jackc/pgx/v5/pgconn.(*PgConn).CopyFrom"},
		{"a socket read belongs to net/http above it", []frame{sys, {"net.(*conn).Read", "net.go"},
			{"net/http.(*persistConn).readLoop", "transport.go"}}, stRead, "net/http.(*persistConn).readLoop"},
		{"the decoder called from inside pgx's COPY is decode", []frame{{"runtime.memmove", "memmove.s"},
			{g + "spatial/geojson.(*scanner).rawStr", g + "spatial/geojson/scan.go"},
			{"github.com/jackc/pgx/v5.(*copyFrom).buildCopyBuf", "copy_from.go"}}, stRead, g + "spatial/geojson.(*scanner).rawStr"},
		{"pgx's own COPY buffer is encode", []frame{{"github.com/jackc/pgx/v5.(*copyFrom).buildCopyBuf", "copy_from.go"}}, stEncode,
			"github.com/jackc/pgx/v5.(*copyFrom).buildCopyBuf"},
		{"the store's own binary COPY tuples are encode", []frame{{g + "store/postgis.appendCopyRow", "copywire.go"},
			{g + "store/postgis.(*copyReader).Read", "copywire.go"}}, stEncode, g + "store/postgis.appendCopyRow"},
		{"the store's text cells for COPY are encode", []frame{{"internal/strconv.formatBase10", "itoa.go"},
			{g + "store/postgis.(*rowBuilder).cell", "copyrow.go"}, {g + "store/postgis.(*rowBuilder).build", "copyrow.go"},
			{g + "store/postgis.(*copySource).Next", "sink.go"}}, stEncode, g + "store/postgis.(*rowBuilder).cell"},
		{"the store's tuples written straight into the COPY buffer are encode", []frame{{"internal/strconv.formatBase10", "itoa.go"},
			{g + "store/postgis.appendCell", "copyrow.go"}, {g + "store/postgis.appendRow", "copyrow.go"},
			{g + "store/postgis.(*copySource).appendNext", "sink.go"}}, stEncode, g + "store/postgis.appendCell"},
		{"an allocation is runtime/GC wherever it comes from", []frame{{"runtime.nextFreeFast", "malloc.go"}, {"runtime.mallocgc", "malloc.go"},
			{g + "spatial/geojson.(*Reader).properties", "x.go"}}, stGC, "runtime.mallocgc"},
		{"payload hashing by file", []frame{{"crypto/internal/fips140/sha256.blockSHANI", "s.go"},
			{g + "spatial.PayloadHash", "/src/spatial/hash.go"}, {g + "store/postgis.featureRow", "sink.go"}}, stHash, g + "spatial.PayloadHash"},
		{"SQLite under the R-tree build is index", []frame{{"modernc.org/sqlite/lib._sqlite3VdbeExec", "sqlite.go"},
			{"database/sql.(*Tx).ExecContext", "sql.go"}, {g + "store/gpkg.writeRTree", "/src/store/gpkg/rtree.go"}}, stIndex, g + "store/gpkg.writeRTree"},
		{"the payload-hash index built at the end is index", []frame{{"modernc.org/sqlite/lib._vdbeSorterMerge", "sqlite.go"},
			{"database/sql.(*Tx).ExecContext", "sql.go"}, {g + "store/gpkg.(*Store).buildHashIndex.func1", "/src/store/gpkg/deferred.go"},
			{g + "store/gpkg.(*Store).buildHashIndex", "/src/store/gpkg/deferred.go"}}, stIndex, g + "store/gpkg.(*Store).buildHashIndex.func1"},
		{"SQLite elsewhere is write", []frame{{"modernc.org/sqlite/lib._walChecksumBytes", "sqlite.go"},
			{g + "store/gpkg.(*unitTx).Commit", "unit.go"}}, stWrite, "modernc.org/sqlite/lib._walChecksumBytes"},
		{"GeoPackage blob encoding by file", []frame{{g + "store/gpkg.appendWKB", "/src/store/gpkg/geom_encode.go"},
			{g + "store/gpkg.encodeFeature", "unit.go"}}, stEncode, g + "store/gpkg.appendWKB"},
		{"the scheduler alone is runtime", []frame{{"runtime.futex", "f.go"}, {"runtime.findRunnable", "p.go"}, {"runtime.mcall", "a.s"}},
			stGC, "runtime.mcall"},
		{"unmatched code is other, named by its root", []frame{{"runtime.memmove", "m.s"}, {g + "flows/engine.(*runner).drain.func1", "r.go"}},
			stOther, g + "flows/engine.(*runner).drain.func1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, by := stageOf(tt.stack)
			if got != tt.want || by != tt.by {
				t.Errorf("stageOf = %q by %q, want %q by %q", got, by, tt.want, tt.by)
			}
		})
	}
}
