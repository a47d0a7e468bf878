#!/usr/bin/env bash
# bench/mirror.sh: what keeping a mirror costs (make bench-mirror). The sample WFS serves
# FEATURES parcels (default 100,000); between two runs CHANGED of them (default 1%) change
# on the server: half edited, a quarter deleted, a quarter added. Each repetition loads
# three tables from scratch at revision 0, switches the server to revision 1 and runs
# each flow again:
#   append          target.mode: append (the baseline: a plain harvest of the same data)
#   mirror          target.mode: mirror (updates in place, deletes what is gone)
#   mirror+history  target.mode: mirror, target.history: true (closes versions instead)
# and reports each run's wall time (median over REPEAT, default 3, the order rotating) and
# the mirrors' ratio to append, the HTTP requests of each second run (the mirrors ask the
# server by id for the features the listing left out before deleting them: their extra
# requests over append's are that), with what the mirror's second run reported.
#
#   bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/mirror.sh bin/geoflow
#   GEOFLOW_DATABASE_URL=/tmp/bench.gpkg bash bench/mirror.sh bin/geoflow
set -euo pipefail
bin=${1:-bin/geoflow}
features=${FEATURES:-100000}
changed=${CHANGED:-$((features / 100))}
repeat=${REPEAT:-3}
db=${GEOFLOW_DATABASE_URL:?a PostgreSQL URL, or a GeoPackage file ending in .gpkg}
edited=$((changed / 2)); deleted=$((changed / 4)); added=$((changed - edited - changed / 4))
out=$(mktemp -d)
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
pid=""
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$out"' EXIT
gpkg=false; [[ "$db" == *.gpkg ]] && gpkg=true

port=$(free_port)
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" --edited "$edited" --deleted "$deleted" --added "$added" >"$out/wfs.log" 2>&1 & pid=$!
wait_port "$port"
revision() { curl -fsS -X POST "http://127.0.0.1:$port/_dev/revision?rev=$1" >/dev/null; }

flows=(append mirror mirror_history)
for f in "${flows[@]}"; do
  mode=$f; history=false
  [[ $f == mirror_history ]] && { mode=mirror; history=true; }
  cat >"$out/$f.yaml" <<YAML
name: bench_$f
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:$port/wfs
    typename: gf:parcels
    target: {table: bench_$f, mode: $mode, history: $history}
YAML
done

reset() {
  if $gpkg; then rm -f "$db" "$db-wal" "$db-shm"; else
    psql -X -qtA "$db" -c "DROP TABLE IF EXISTS bench_append, bench_mirror, bench_mirror_history CASCADE" >/dev/null 2>&1 || true
  fi
}
# run FLOW: times one run, in seconds, and keeps its id.
run() {
  local start end code=0
  start=$(date +%s.%N)
  "$bin" run "$out/$1.yaml" --progress off --log-level warn >"$out/$1.log" 2>&1 || code=$?
  end=$(date +%s.%N)
  if [[ $code != 0 ]]; then echo "bench_$1 failed (exit $code):" >&2; tail -20 "$out/$1.log" >&2; exit 1; fi
  # The run's summary: "host http://...: N requests, M retries; ..."
  grep -o '[0-9]* requests' "$out/$1.log" | awk '{n+=$1} END{print n+0}' >"$out/$1.requests"
  awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b-a}'
}
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

declare -A first second reqs
for r in $(seq 1 "$repeat"); do
  reset; revision 0
  order=("${flows[@]:$((r % 3))}" "${flows[@]:0:$((r % 3))}")
  for f in "${order[@]}"; do first[$f]+="$(run "$f") "; done
  revision 1
  for f in "${order[@]}"; do second[$f]+="$(run "$f") "; reqs[$f]=$(cat "$out/$f.requests"); done
done
last=$("$bin" runs list --flow bench_mirror --limit 1 | awk 'NR==2{print $1}')

store=PostGIS; $gpkg && store=GeoPackage
printf '\n%s, %s parcels; between the runs %s changed on the server (%s edited, %s deleted, %s added); median of %s\n\n' \
  "$store" "$features" "$changed" "$edited" "$deleted" "$added" "$repeat"
printf '| flow | first load | ratio | run with %s changed | ratio | its requests | beyond append |\n|---|---:|---:|---:|---:|---:|---:|\n' "$changed"
a1=$(echo ${first[append]} | tr ' ' '\n' | median); a2=$(echo ${second[append]} | tr ' ' '\n' | median)
for f in "${flows[@]}"; do
  t1=$(echo ${first[$f]} | tr ' ' '\n' | median); t2=$(echo ${second[$f]} | tr ' ' '\n' | median)
  printf '| %s | %.2f s | %.2fx | %.2f s | %.2fx | %d | %+d |\n' "$f" "$t1" "$(awk -v a="$t1" -v b="$a1" 'BEGIN{print a/b}')" "$t2" "$(awk -v a="$t2" -v b="$a2" 'BEGIN{print a/b}')" \
    "${reqs[$f]}" "$((reqs[$f] - reqs[append]))"
done
echo
for f in "${flows[@]}"; do echo "$f: first loads ${first[$f]}s; second runs ${second[$f]}s"; done
echo
"$bin" runs show "$last" | sed -n '/^TASK/,$p'
