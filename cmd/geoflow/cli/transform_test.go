package cli_test

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// transformWhere is the filter the transform tests apply, in CQL2 on the source's
// property names (the ArcGIS sample names its field land_use, the others "Land-Use"),
// and transformSQL the same in SQL on the laundered columns of an untransformed table:
// the oracle.
const (
	transformWhere = `%s IN ('residential', 'mixed') AND area_m2 > 4000 OR zone IS NULL`
	transformSQL   = `(land_use IN ('residential', 'mixed') AND area_m2 > 4000) OR zone IS NULL`
)

// transformFlow is a flow harvesting the sample server into table through the
// transform of the tests.
func transformFlow(source, table, mode string) string {
	landUse := `"Land-Use"`
	if strings.Contains(source, "arcgis_features") {
		landUse = "land_use"
	}
	return fmt.Sprintf(`name: %[2]s
defaults:
  retry: {max_attempts: 3, base_delay: 1ms, max_delay: 10ms}
  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}
tasks:
  parcels:
    %[1]s
    transform:
      columns: {parcel: parcel_id, zoning: zone, value: assessed_value, area: area_m2}
      where: %[4]q
      geometry: promote_to_multi
    target: {table: %[2]s, mode: %[3]s}
`, source, table, mode, fmt.Sprintf(transformWhere, landUse))
}

// TestTransform harvests each kind of feature source through a transform and compares
// with an untransformed harvest of the same server: exactly the columns asked for, in
// order; exactly the features the equivalent SQL keeps, with the payload hashes of the
// untransformed rows; one geometry type; "complete"; a rerun that stores nothing.
func TestTransform(t *testing.T) {
	eachStore(t, func(t *testing.T, db string) {
		for _, kind := range []string{"wfs", "ogcapi_features", "arcgis_features"} {
			t.Run(kind, func(t *testing.T) { testTransform(t, db, kind) })
		}
	})
}

func testTransform(t *testing.T, db, kind string) {
	e := newMirrorEnv(t, db, kind, wfsserver.Changes{})
	oracle, table := "oracle_"+strings.Split(kind, "_")[0], "shaped_"+strings.Split(kind, "_")[0]
	e.geoflow(0, "run", writeFlow(t, mirrorFlow(e.source, oracle, "append", false)), "--progress", "off", "--log-level", "warn")
	flow := writeFlow(t, transformFlow(e.source, table, "append"))
	out := e.geoflow(0, "run", flow, "--progress", "off", "--log-level", "warn")
	want := e.count("SELECT count(*) FROM " + oracle + " WHERE " + transformSQL)
	all := e.count("SELECT count(*) FROM " + oracle)
	if want == 0 || want == all {
		t.Fatalf("the filter keeps %d of %d features: a test that shows nothing", want, all)
	}
	if !strings.Contains(out, fmt.Sprintf("%d inserted", want)) || !strings.Contains(out, fmt.Sprintf("%d filtered out", all-want)) ||
		!strings.Contains(out, "done") || strings.Contains(out, "incomplete") {
		t.Errorf("run output, want %d inserted, %d filtered out, complete:\n%s", want, all-want, out)
	}
	if got := columnNames(t, db, table); got != "parcel,zoning,value,area" {
		t.Errorf("columns %q, want parcel,zoning,value,area", got)
	}
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash FROM %s WHERE %s EXCEPT SELECT gf_feature_id, gf_payload_hash FROM %s) AS x", oracle, transformSQL, table),
		fmt.Sprintf("SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash FROM %s EXCEPT SELECT gf_feature_id, gf_payload_hash FROM %s WHERE %s) AS x", table, oracle, transformSQL),
		fmt.Sprintf("SELECT count(*) FROM %s s JOIN %s o USING (gf_feature_id) WHERE s.parcel IS DISTINCT FROM o.parcel_id OR s.zoning IS DISTINCT FROM o.zone OR s.value IS DISTINCT FROM o.assessed_value", table, oracle),
	} {
		if n := e.count(q); n != 0 {
			t.Errorf("the transformed table differs from the oracle in %d features:\n%s", n, q)
		}
	}
	if types := geometryTypes(t, db, table); types != "MULTIPOLYGON" {
		t.Errorf("geometry types %q, want MULTIPOLYGON alone", types)
	}
	again := e.geoflow(0, "run", flow, "--progress", "off", "--log-level", "warn")
	if !strings.Contains(again, " 0 inserted") {
		t.Errorf("a rerun of an unchanged source stored something:\n%s", again)
	}
}

// columnNames lists a table's property columns in order, comma-separated.
func columnNames(t *testing.T, db, table string) string {
	q := "SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position"
	if testdb.IsGeoPackage(db) {
		q = "SELECT name FROM pragma_table_info(?) ORDER BY cid"
	}
	var names []string
	for _, r := range testdb.Query(t, db, q, table) {
		n := fmt.Sprint(r[0])
		if n != "geom" && n != "fid" && !strings.HasPrefix(n, "gf_") {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// geometryTypes lists the distinct geometry types of a table's rows: by PostGIS, or by
// GDAL reading the GeoPackage (as a user would check it).
func geometryTypes(t *testing.T, db, table string) string {
	if !testdb.IsGeoPackage(db) {
		var ts []string
		for _, r := range testdb.Query(t, db, "SELECT DISTINCT GeometryType(geom) FROM "+table+" ORDER BY 1") {
			ts = append(ts, fmt.Sprint(r[0]))
		}
		return strings.Join(ts, ",")
	}
	out, err := exec.Command("ogrinfo", "-q", db, "-sql", "SELECT DISTINCT ST_GeometryType(geom) AS t FROM "+table).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo: %v\n%s", err, out)
	}
	var ts []string
	for _, m := range regexp.MustCompile(`t \(String\) = (\S+)`).FindAllStringSubmatch(string(out), -1) {
		ts = append(ts, m[1])
	}
	return strings.Join(ts, ",")
}

// TestTransformMirror: a mirror whose features stop matching transform.where upstream
// deletes them, as it deletes features the server no longer has (under the same safety
// rail), and its run is complete: the features it left out were returned, so seen.
func TestTransformMirror(t *testing.T) {
	eachStore(t, func(t *testing.T, db string) {
		for _, kind := range []string{"wfs", "ogcapi_features"} {
			t.Run(kind, func(t *testing.T) { testTransformMirror(t, db, kind) })
		}
	})
}

func testTransformMirror(t *testing.T, db, kind string) {
	const edited = 40 // edited parcels get updated_at 2025-01-01 and later, the others earlier
	e := newMirrorEnv(t, db, kind, wfsserver.Changes{Edited: edited})
	mirror := "mirror_" + strings.Split(kind, "_")[0]
	flow := writeFlow(t, strings.Replace(mirrorFlow(e.source, mirror, "mirror", false), "    target:",
		"    transform: {where: \"updated_at < TIMESTAMP('2025-01-01T00:00:00Z')\"}\n    target:", 1))
	e.geoflow(0, "run", flow, "--progress", "off", "--log-level", "warn")
	if n := e.count("SELECT count(*) FROM " + mirror); n != int64(e.src.Count()) {
		t.Fatalf("the first run stored %d of %d features, all of which match", n, e.src.Count())
	}
	if err := e.src.SetRevision(1, e.changes); err != nil {
		t.Fatal(err)
	}
	out := e.geoflow(0, "run", flow, "--progress", "off", "--log-level", "warn")
	if !strings.Contains(out, fmt.Sprintf("%d deleted", edited)) || !strings.Contains(out, fmt.Sprintf("%d filtered out", edited)) ||
		strings.Contains(out, "incomplete") {
		t.Errorf("second run, want %d deleted and filtered out, complete:\n%s", edited, out)
	}
	oracle := "oracle_" + mirror
	e.geoflow(0, "run", writeFlow(t, mirrorFlow(e.source, oracle, "append", false)), "--progress", "off", "--log-level", "warn")
	for _, q := range []string{
		"SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash FROM " + mirror + " EXCEPT SELECT gf_feature_id, gf_payload_hash FROM " + oracle + " WHERE updated_at < '2025-01-01') AS x",
		"SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash FROM " + oracle + " WHERE updated_at < '2025-01-01' EXCEPT SELECT gf_feature_id, gf_payload_hash FROM " + mirror + ") AS x",
	} {
		if n := e.count(q); n != 0 {
			t.Errorf("the mirror differs from the filtered source in %d features:\n%s", n, q)
		}
	}
	if n := e.count("SELECT count(*) FROM " + mirror); n != int64(e.src.Count()-edited) {
		t.Errorf("the mirror holds %d features, want %d", n, e.src.Count()-edited)
	}
}

// TestTransformValidate: geoflow validate reports a where that does not parse at the
// key's line and column, with the column inside the expression, and bad column names at
// theirs.
func TestTransformValidate(t *testing.T) {
	flow := writeFlow(t, `name: shaped
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:1/wfs
    typename: gf:parcels
    transform:
      columns: {parcel: parcel_id, Zoning: zone}
      where: "land_use = 'residential' AND area_m2 >> 500"
    target: {table: parcels}
`)
	code, out, errs := geoflow(t, nil, "validate", flow)
	all := out + errs
	for _, want := range []string{
		"flow.yaml:9:7: task \"parcels\": transform.where: syntax error at column 39 of the expression: unexpected \">\"",
		"flow.yaml:8:36: task \"parcels\": transform.columns.Zoning: \"Zoning\" is not a column name",
	} {
		if code == 0 || !strings.Contains(all, want) {
			t.Errorf("validate: exit %d, want the problem %q in\n%s", code, want, all)
		}
	}
}
