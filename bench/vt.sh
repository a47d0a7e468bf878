#!/usr/bin/env bash
# bench/vt.sh: what the map of a table costs (make bench-vt). The sample WFS serves
# FEATURES parcels (default 100,000); geoflow harvests them with default flags into the
# PostgreSQL at GEOFLOW_DATABASE_URL and into a GeoPackage, serves each with geoflow ui,
# and bench/vt asks each for TILES vector tiles (default 200) over zoom levels 10 to 16,
# one at a time with no cache, printing latency p50/p95/max, sizes and thinning by zoom.
#
#   bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/vt.sh bin/geoflow
set -euo pipefail
bin=${1:?the geoflow binary}
features=${FEATURES:-100000}
tiles=${TILES:-200}
pg=${GEOFLOW_DATABASE_URL:?a PostgreSQL URL}
out=$(mktemp -d)
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wait_port() { for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT
go build -o "$out/vt" ./bench/vt
port=$(free_port)
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" >"$out/wfs.log" 2>&1 & pids+=($!)
wait_port "$port"
mkdir -p "$out/flows"
cat >"$out/flows/parcels.yaml" <<YAML
name: parcels
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:$port/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: parcels}
YAML
echo "| store | zoom | tiles | p50 | p95 | max | features/tile (mean) | KB/tile gzipped (mean) | thinned |" >"$out/table"
for store in PostGIS GeoPackage; do
  db=$pg; [[ $store == GeoPackage ]] && db=$out/vt.gpkg
  s=$(date +%s.%N)
  "$bin" --database "$db" run "$out/flows/parcels.yaml" --progress off >"$out/run-$store.log" 2>&1 || { cat "$out/run-$store.log" >&2; exit 1; }
  echo "$store: harvested $features parcels in $(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s" >&2
  ui=$(free_port)
  "$bin" --database "$db" ui --listen 127.0.0.1:$ui --flows "$out/flows" --read-only >"$out/ui-$store.log" 2>&1 & uipid=$!
  pids+=($uipid)
  wait_port "$ui" || { cat "$out/ui-$store.log" >&2; exit 1; }
  "$out/vt" -url "http://127.0.0.1:$ui" -table parcels -tiles "$tiles" -label "$store" | tail -n +3 >>"$out/table"
  kill "$uipid"; wait "$uipid" 2>/dev/null || true
done
cat "$out/table"
