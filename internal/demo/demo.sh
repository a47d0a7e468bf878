#!/usr/bin/env bash
# make demo: the sample WFS on a free loopback port, flows/parcels.yaml into the PostGIS
# at $GEOFLOW_DATABASE_URL (postgis.sh provides one), then a summary.
set -euo pipefail
bin=${1:-bin/geoflow}
features=${DEMO_FEATURES:-20000}
: "${GEOFLOW_DATABASE_URL:?postgis.sh sets GEOFLOW_DATABASE_URL}"

port=""
for _ in $(seq 1 50); do
  p=$(( 20000 + RANDOM % 20000 ))
  if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "demo: no free port" >&2; exit 1; }

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
grep '^served' "$log" | sed 's/^/  sample WFS /' || true
awk -v s="$start" -v e="$end" -v db="${GEOFLOW_DATABASE_URL%%\?*}" 'BEGIN { sub("//[^@]*@", "//", db); printf "  wall time %.1f s; table public.parcels in %s\n", e - s, db }'
if command -v psql >/dev/null; then
  psql -X -q "$GEOFLOW_DATABASE_URL" -c "SELECT count(*) AS rows, count(DISTINCT gf_feature_id) AS distinct_features,
    round(ST_XMin(ST_Extent(geom))::numeric, 4) AS min_lon, round(ST_YMin(ST_Extent(geom))::numeric, 4) AS min_lat FROM public.parcels"
fi
exit $status
