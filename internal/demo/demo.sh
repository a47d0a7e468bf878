#!/usr/bin/env bash
# make demo: the sample WFS on a free loopback port, then flows/parcels.yaml's chain: the
# harvest into a GeoPackage (geoflow-demo.gpkg next to the repo, left there to look at), a
# SQL summary by zone, and the run's changes exported to flows/out/parcels-changes.fgb;
# then a summary. No database server: set GEOFLOW_DATABASE_URL to a postgres:// URL to run
# it on PostGIS instead. PORT=N serves the sample WFS on 127.0.0.1:N (default a free port).
set -euo pipefail
bin=${1:-bin/geoflow}
features=${DEMO_FEATURES:-20000}
gpkg=$(pwd)/geoflow-demo.gpkg
if [ -z "${GEOFLOW_DATABASE_URL:-}" ]; then
  rm -f "$gpkg" "$gpkg-wal" "$gpkg-shm" "$gpkg-lock"
  export GEOFLOW_DATABASE_URL=$gpkg
fi

# The sample WFS's port: PORT (make demo PORT=8090), else a free one.
port=${PORT:-}
if [ -n "$port" ]; then
  case $port in *[!0-9]*) echo "demo: PORT=$port is not a port number" >&2; exit 2 ;; esac
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "demo: something already listens on 127.0.0.1:$port: choose another PORT" >&2; exit 1
  fi
else
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 20000 ))
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then port=$p; break; fi
  done
  [ -n "$port" ] || { echo "demo: no free port" >&2; exit 1; }
fi

log=$(mktemp)
"$bin" dev wfs --listen "127.0.0.1:$port" --features "$features" >"$log" 2>&1 &
wfs_pid=$!
trap 'kill "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
  kill -0 "$wfs_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
echo "== sample WFS: http://127.0.0.1:$port/wfs ($features parcels)"
echo "== geoflow run flows/parcels.yaml"
start=$(date +%s.%N)
status=0
WFS_URL="http://127.0.0.1:$port/wfs" "$bin" run flows/parcels.yaml --progress log || status=$?
end=$(date +%s.%N)
kill -INT "$wfs_pid"; wait "$wfs_pid" 2>/dev/null || true
echo "== summary"
fgb=flows/out/parcels-changes.fgb
if command -v ogrinfo >/dev/null && [ -f "$fgb" ]; then
  ogrinfo -ro -so -al "$fgb" 2>/dev/null | grep -E '^(Feature Count|Extent):' | sed "s|^|  $fgb: |" || true
fi
grep '^served' "$log" | sed 's/^/  sample WFS /' || true
awk -v s="$start" -v e="$end" 'BEGIN { printf "  wall time %.1f s\n", e - s }'
if [ "$GEOFLOW_DATABASE_URL" = "$gpkg" ]; then
  echo "  the features, their R-tree and geoflow's run history are in $gpkg"
  echo "  look at it:  ogrinfo -so $gpkg parcels      (or open it in QGIS)"
  echo "  history:     $bin runs list --database $gpkg"
  echo "  on a map:    $bin ui --database $gpkg   (then open http://127.0.0.1:8080/)"
  echo "  by zone:     the SQL step's table zoning_summary, in the same file"
  echo "  changes:     $fgb (what this run inserted, updated, deleted; gf_change)"
  if command -v ogrinfo >/dev/null; then
    ogrinfo -so "$gpkg" parcels 2>/dev/null | grep -E '^(Layer name|Feature Count|Extent|Geometry):' | sed 's/^/  ogrinfo: /' || true
  fi
elif command -v psql >/dev/null; then
  psql -X -q "$GEOFLOW_DATABASE_URL" -c "SELECT count(*) AS rows, count(DISTINCT gf_feature_id) AS distinct_features,
    round(ST_XMin(ST_Extent(geom))::numeric, 4) AS min_lon, round(ST_YMin(ST_Extent(geom))::numeric, 4) AS min_lat FROM public.parcels"
fi
exit $status
