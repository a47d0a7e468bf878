#!/usr/bin/env bash
# bench/ab.sh: one harvest, two geoflow binaries (make bench-ab): what a change costs.
# The sample WFS serves FEATURES parcels (default 100,000); each repetition (REPEAT,
# default 3) harvests them into a fresh table with binary A, then B, then the other way
# round, and the script reports each binary's median wall time and B/A.
#
#   git worktree add /tmp/before HEAD~3 && (cd /tmp/before && go build -o /tmp/geoflow-a ./cmd/geoflow)
#   bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/ab.sh /tmp/geoflow-a bin/geoflow
#   GEOFLOW_DATABASE_URL=/tmp/ab.gpkg bash bench/ab.sh /tmp/geoflow-a bin/geoflow
set -euo pipefail
a=${1:?binary A}; b=${2:?binary B}
features=${FEATURES:-100000}
repeat=${REPEAT:-3}
db=${GEOFLOW_DATABASE_URL:?a PostgreSQL URL, or a GeoPackage file ending in .gpkg}
out=$(mktemp -d)
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
pid=""
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$out"' EXIT
port=$(free_port)
"$b" dev wfs --listen 127.0.0.1:$port --features "$features" >"$out/wfs.log" 2>&1 & pid=$!
wait_port "$port"

run() { # run BIN N: harvest into a fresh table, print the wall time in seconds
  local bin=$1 n=$2
  cat >"$out/f$n.yaml" <<YAML
name: ab_$n
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:$port/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: ab_$n}
YAML
  local s e
  s=$(date +%s.%N)
  "$bin" --database "$db" run "$out/f$n.yaml" --progress off >"$out/run$n.log" 2>&1 || { cat "$out/run$n.log" >&2; return 1; }
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f\n", e - s }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
n=0
for i in $(seq 1 "$repeat"); do
  if (( i % 2 )); then order="a b"; else order="b a"; fi
  for w in $order; do
    n=$((n + 1))
    bin=$a; [[ $w == b ]] && bin=$b
    t=$(run "$bin" $n)
    echo "$w $t" >>"$out/times"
    echo "repetition $i: $w ${t}s" >&2
  done
done
ma=$(awk '$1 == "a" { print $2 }' "$out/times" | median)
mb=$(awk '$1 == "b" { print $2 }' "$out/times" | median)
echo "| store | features | A median | B median | B/A |"
echo "|---|---:|---:|---:|---:|"
store=PostGIS; [[ "$db" == *.gpkg ]] && store=GeoPackage
awk -v s="$store" -v f="$features" -v a="$ma" -v b="$mb" 'BEGIN { printf "| %s | %d | %.2f s | %.2f s | %.3f |\n", s, f, a, b, b / a }'
