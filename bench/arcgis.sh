#!/usr/bin/env bash
# bench/arcgis.sh: a 100,000-parcel harvest from the sample ArcGIS feature service that
# misbehaves (make bench-arcgis), checked against the same parcels harvested from the
# sample WFS.
#
#   bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/arcgis.sh bin/geoflow
#   FEATURES=20000 FAULTS=0.10 ... bash bench/arcgis.sh bin/geoflow
#
# The layer answers at most 1,000 features a query (maxRecordCount), caps an id list at
# 10,000 (exceededTransferLimit), and fails FAULTS (default 5%) of its queries: a third 503
# with an HTML page, a third HTTP 200 with {"error":{"code":500}}, a third a body cut off
# mid-stream. The report: exit code, requests, rows and distinct object ids against the
# source, the parcels whose geometry differs from the source's (Hausdorff distance above
# 1e-9 degree, or not ST_Equals), with the polygons with holes and the multipart ones
# counted apart, and the attributes that differ.
set -euo pipefail
bin=${1:-bin/geoflow}
features=${FEATURES:-100000}
faults=${FAULTS:-0.05}
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
out=$(mktemp -d)
sql() { psql -X -qtA "$db" -c "$1"; }
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
pid=""
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$out"' EXIT
"$bin" migrate up >/dev/null
sql "DROP TABLE IF EXISTS arcgis_src, arcgis_parcels" >/dev/null 2>&1 || true

# The truth: the same parcels (same seed) from the sample WFS.
port=$(free_port)
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" >"$out/wfs.log" 2>&1 & pid=$!
wait_port "$port"
cat >"$out/src.yaml" <<YAML
name: arcgis_bench_src
tasks:
  parcels: {type: wfs, url: "http://127.0.0.1:$port/wfs", typename: gf:parcels, target: {table: arcgis_src}}
YAML
"$bin" run "$out/src.yaml" --progress off --log-level error >"$out/src.log" 2>&1
kill "$pid"; wait "$pid" 2>/dev/null || true

# The harvest.
port=$(free_port)
third=$(awk -v f="$faults" 'BEGIN{printf "%.4f", f/3}')
"$bin" dev arcgis --listen 127.0.0.1:$port --features "$features" --max-record-count 1000 --max-ids 10000 \
  --fault-5xx "$third" --fault-error-200 "$third" --fault-truncate "$third" >"$out/arcgis.log" 2>&1 & pid=$!
wait_port "$port"
cat >"$out/flow.yaml" <<YAML
name: arcgis_bench
tasks:
  parcels:
    type: arcgis_features
    url: http://127.0.0.1:$port/arcgis/rest/services/Parcels/FeatureServer/0
    target: {table: arcgis_parcels}
YAML
start=$(date +%s.%N)
code=0; "$bin" run "$out/flow.yaml" --progress off --log-format text >"$out/run.log" 2>&1 || code=$?
end=$(date +%s.%N)
kill -INT "$pid"; wait "$pid" 2>/dev/null || true
served=$(sed -n 's/^served \(.*\)/\1/p' "$out/arcgis.log")

read -r rows distinct <<<"$(sql "SELECT count(*), count(DISTINCT objectid) FROM arcgis_parcels" | tr '|' ' ')"
report=$(sql "SELECT format('%s parcels compared; geometry differs: %s (of %s with holes: %s; of %s multipart: %s); largest Hausdorff distance %s; attributes differ: %s',
    count(*),
    count(*) FILTER (WHERE NOT ST_Equals(g.geom, s.geom) OR ST_HausdorffDistance(g.geom, s.geom) > 1e-9),
    count(*) FILTER (WHERE ST_NumInteriorRings(ST_GeometryN(s.geom, 1)) > 0),
    count(*) FILTER (WHERE ST_NumInteriorRings(ST_GeometryN(s.geom, 1)) > 0 AND (NOT ST_Equals(g.geom, s.geom) OR ST_HausdorffDistance(g.geom, s.geom) > 1e-9)),
    count(*) FILTER (WHERE ST_NumGeometries(s.geom) > 1),
    count(*) FILTER (WHERE ST_NumGeometries(s.geom) > 1 AND (NOT ST_Equals(g.geom, s.geom) OR ST_HausdorffDistance(g.geom, s.geom) > 1e-9)),
    max(ST_HausdorffDistance(g.geom, s.geom)),
    count(*) FILTER (WHERE g.cadastre_no IS DISTINCT FROM s.cadastre_no OR g.area_m2 IS DISTINCT FROM s.area_m2
      OR g.zone IS DISTINCT FROM s.zone OR g.land_use IS DISTINCT FROM s.land_use OR g.owner_count IS DISTINCT FROM s.owner_count
      OR g.surveyed::date IS DISTINCT FROM s.surveyed OR g.updated_at IS DISTINCT FROM s.updated_at))
  FROM arcgis_parcels g JOIN arcgis_src s USING (parcel_id)")
printf 'arcgis_features, %s parcels, maxRecordCount 1000, id lists capped at 10000, %s faults: exit %s in %.1fs; %s rows, %s distinct object ids\n' \
  "$features" "$faults" "$code" "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" "$rows" "$distinct"
echo "server: $served"
echo "$report"
grep -E 'server count|complete|INCOMPLETE|run finished' "$out/run.log" | cut -c1-250
