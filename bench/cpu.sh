#!/usr/bin/env bash
# bench/cpu.sh: where the client's CPU goes, per stage, per format (GeoJSON, GML 3.2) and store
# (PostGIS, GeoPackage), against the sample WFS at full speed on this machine.
#
#   make bench-cpu
#   FEATURES=100000 ROUNDS=1 bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/cpu.sh bin/geoflow
#
# Each round runs, for each format, geoflow run into PostGIS (a fresh database made through
# the URL given) and then into a fresh GeoPackage, under /usr/bin/time and with --cpuprofile.
# Reported per combination: the median wall, user and sys seconds, CPU microseconds per stored
# feature ((user+sys)/features), peak RSS and the median of the rounds' GeoPackage/PostGIS wall
# ratios; then CPU by stage from the profiles (bench/cpu: read and decode, hash, encode, write
# and commit, index, runtime/GC, other) and each combination's top 15 flat functions.
# FORMATS="geojson" runs one format only, STORES="gpkg" one store; KEEP=1 keeps the profiles
# and logs. BEFORE=path/to/an/older/geoflow compares two builds: each round runs the older
# build and then this one for each combination, so that both see the same machine, and
# every table has a row per build ("before", "after").
set -euo pipefail
bin=$(realpath "${1:-bin/geoflow}")
builds=${BEFORE:+before after}; builds=${builds:--}
before_bin=${BEFORE:+$(realpath "$BEFORE")}
features=${FEATURES:-1000000}
rounds=${ROUNDS:-3}
formats=${FORMATS:-geojson gml}
stores=${STORES:-postgis gpkg}
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
out=$(mktemp -d)
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
go build -o "$out/cpustages" ./bench/cpu

free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wfs_pid=""
start_wfs() {
  local port; port=$(free_port); url="http://127.0.0.1:$port/wfs"
  "$bin" dev wfs --listen 127.0.0.1:$port --features "$features" --count-default 1000 >"$out/wfs.log" 2>&1 & wfs_pid=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.1; done
  echo "bench: the sample WFS did not start" >&2; cat "$out/wfs.log" >&2; exit 1; }
stop_wfs() { [ -n "$wfs_pid" ] && { kill "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true; }; }
trap stop_wfs EXIT

flow() { # format -> flow file
  cat >"$out/$1.yaml" <<YAML
name: cpu_$1
defaults:
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: $url
    typename: gf:parcels
    bbox: [11.44, 48.04, 11.56, 48.16]
    output_format: $1
    target: {table: parcels}
YAML
  echo "$out/$1.yaml"; }

# pgdb NAME: the URL given with its database name replaced by NAME
pgdb() { echo "$db" | sed -E "s#^([^?]*/)[^/?]*#\1$1#"; }
sql() { PGOPTIONS=--client-min-messages=warning psql -X -qtA "$db" -c "$1"; }

# label STORE BUILD: a combination's store as the tables name it: "gpkg", or with two
# builds "gpkg before"
label() { [ "$2" = - ] && echo "$1" || echo "$1 $2"; }

# run FORMAT STORE ROUND BUILD: one timed, profiled geoflow run of BUILD (- for the only
# one); appends "format store[-build] round wall user sys rss_kb inserted" to $out/runs.txt
run() {
  local format=$1 store=$2 round=$3 build=$4 key name target dbname="gf_cpu_$1_$3" exe=$bin
  key=$(label "$store" "$build" | tr ' ' -); name="$format-$key-$round"
  [ "$build" = before ] && exe=$before_bin
  if [ "$store" = postgis ]; then
    sql "DROP DATABASE IF EXISTS $dbname" >/dev/null; sql "CREATE DATABASE $dbname" >/dev/null; target=$(pgdb "$dbname")
  else
    rm -f "$out/$name.gpkg"*; target=$out/$name.gpkg
  fi
  /usr/bin/time -f '%e %U %S %M' -o "$out/$name.time" env -u GEOFLOW_DATABASE_URL "$exe" run "$out/$format.yaml" \
    --database "$target" --progress off --cpuprofile "$out/$name.prof" >"$out/$name.log" 2>&1 ||
    { echo "bench: $name failed:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
  local inserted; inserted=$(sed -n 's/^  features: \([0-9]*\) inserted.*/\1/p' "$out/$name.log")
  [ "$inserted" = "$features" ] || echo "bench: $name stored $inserted features, not $features" >&2
  echo "$format $key $round $(cat "$out/$name.time") $inserted" >>"$out/runs.txt"
  echo "$out/$name.prof" >>"$out/$format-$key.profs"
  if [ "$store" = postgis ]; then sql "DROP DATABASE $dbname" >/dev/null; else rm -f "$out/$name.gpkg"*; fi
  printf '  %-8s %-15s round %d: %s s wall, %s user, %s sys, %s MB\n' "$format" "$(label "$store" "$build")" "$round" \
    $(awk '{printf "%s %s %s %d", $1, $2, $3, $4/1024}' "$out/$name.time") >&2
}

# median: of the numbers on stdin; nothing for none (a run of one store has no ratio)
median() { sort -n | awk '{v[NR]=$1} END{if (!NR) exit; if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
# col FORMAT STORE AWKEXPR: the median over the rounds of AWKEXPR on runs.txt's fields
col() { awk -v f="$1" -v s="$2" -v n="$features" '$1==f && $2==s {print '"$3"'}' "$out/runs.txt" | median; }

load_before=$(uptime | sed 's/.*load average: //')
start_wfs
for f in $formats; do flow "$f" >/dev/null; done
echo "bench: $features features, $rounds rounds, formats: $formats; sample WFS at $url; load average $load_before" >&2
for round in $(seq 1 "$rounds"); do
  for f in $formats; do for s in $stores; do for b in $builds; do run "$f" "$s" "$round" "$b"; done; done; done
done
stop_wfs
load_after=$(uptime | sed 's/.*load average: //')

printf '%s features from the sample WFS at full speed on this machine (%s cores), %s rounds, %s, %s\n' \
  "$features" "$(nproc)" "$rounds" "$("$bin" version 2>/dev/null | head -1 || echo "?")" "$(date -u +'%Y-%m-%d %H:%M UTC')"
[ -n "$before_bin" ] && printf 'before: %s\n' "$("$before_bin" version 2>/dev/null | head -1 || echo "?")"
printf 'load average (1, 5, 15 min) before: %s; after: %s\n\n' "$load_before" "$load_after"
first=$(label "${stores%% *}" "${builds%% *}" | tr ' ' -)
for f in $formats; do printf '%s: %s\n' "$f" "$(grep -oE 'format=("[^"]*"|[^ ]*)' "$out/$f-$first-1.log" | head -1)"; done
printf '\n| format | store | wall (s) | user (s) | sys (s) | CPU (us/feature) | peak RSS (MB) | GPKG/PostGIS wall |\n|---|---|---|---|---|---|---|---|\n'
for f in $formats; do for b in $builds; do
  pg=$(label postgis "$b" | tr ' ' -); gp=$(label gpkg "$b" | tr ' ' -)
  ratio=$(awk -v f="$f" -v pg="$pg" -v gp="$gp" '$1==f && ($2==pg || $2==gp) {w[$2" "$3]=$4; r[$3]=1}
    END{for (k in r) if ((pg" "k) in w && (gp" "k) in w) print w[gp" "k]/w[pg" "k]}' "$out/runs.txt" | median)
  for s in $stores; do
    k=$(label "$s" "$b" | tr ' ' -)
    printf '| %s | %s | %s | %s | %s | %.1f | %.0f | %s |\n' "$f" "$(label "$s" "$b")" "$(col "$f" "$k" '$4')" "$(col "$f" "$k" '$5')" "$(col "$f" "$k" '$6')" \
      "$(col "$f" "$k" '($5+$6)*1e6/n')" "$(col "$f" "$k" 'int($7/1024)')" "$([ "$s" = gpkg ] && [ -n "$ratio" ] && printf '%.2fx' "$ratio" || echo -)"
  done
done; done
printf '\nAll runs (format store round wall user sys peak-RSS-KB inserted):\n\n```\n'; cat "$out/runs.txt"; printf '```\n\n'
args=()
for f in $formats; do for s in $stores; do for b in $builds; do
  args+=("$f $(label "$s" "$b")=$(paste -sd, "$out/$f-$(label "$s" "$b" | tr ' ' -).profs")")
done; done; done
"$out/cpustages" -features "$features" -top 15 "${args[@]}"
[ -n "${KEEP:-}" ] && echo "kept $out" || rm -rf "$out"
