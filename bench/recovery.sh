#!/usr/bin/env bash
# bench/recovery.sh: what resume, bbox reruns and dead-letter replay cost, in requests.
#
#   bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/recovery.sh bin/geoflow
#   SOURCE=ogcapi ... bash bench/recovery.sh bin/geoflow     (the same parcels as OGC API - Features)
#   SOURCE=arcgis ... bash bench/recovery.sh bin/geoflow     (as an ArcGIS feature service layer)
#
# Against the sample WFS (restarted between phases, so its request counter starts at zero;
# the same seed serves the same parcels): a full run; a --bbox rerun after deleting an
# area's rows; a run killed (SIGKILL) once 30% of the rows are in, then --resume; a run
# with one GetFeature URL in five failing forever, then `dlq replay --all` once healed.
set -euo pipefail
bin=${1:-bin/geoflow}
features=${FEATURES:-50000}
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
out=$(mktemp -d)
sql() { psql -X -qtA "$db" -c "$1"; }
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
source=${SOURCE:-wfs}
port=$(free_port)
case "$source" in
  wfs) url="http://127.0.0.1:$port/wfs"; dev=wfs; task="type: wfs
    typename: gf:parcels" ;;
  ogcapi) url="http://127.0.0.1:$port/ogcapi"; dev=wfs; task="type: ogcapi_features
    collection: parcels" ;;
  arcgis) url="http://127.0.0.1:$port/arcgis/rest/services/Parcels/FeatureServer/0"; dev=arcgis; task="type: arcgis_features" ;;
  *) echo "SOURCE must be wfs, ogcapi or arcgis" >&2; exit 2 ;;
esac
echo "source: $source at $url"
wfs_pid=""
start_wfs() { local extra=(); [ "$dev" = wfs ] && extra=(--latency 2ms)
  "$bin" dev "$dev" --listen 127.0.0.1:$port --features "$features" "${extra[@]}" "$@" >"$out/wfs.log" 2>&1 & wfs_pid=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.1; done; cat "$out/wfs.log" >&2; exit 1; }
stop_wfs() { # sets served to the number of requests the server answered
  kill -INT "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true
  served=$(sed -n 's/^served \([0-9]*\) requests.*/\1/p' "$out/wfs.log"); }
trap 'kill "$wfs_pid" 2>/dev/null || true' EXIT
flow() { cat >"$out/$1.yaml" <<YAML
name: $1
tasks:
  parcels:
    $task
    url: $url
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: $1}
YAML
echo "$out/$1.yaml"; }
run() { "$bin" run "$@" --progress off --log-level error >>"$out/run.log" 2>&1; }

# 1. a full run
sql "DROP TABLE IF EXISTS rec_full, rec_kill, rec_dead" >/dev/null 2>&1 || true
start_wfs; run "$(flow rec_full)"; stop_wfs; full=$served
rows=$(sql "SELECT count(DISTINCT gf_feature_id) FROM rec_full")
echo "full run: $rows distinct features, $full requests"

# 2. delete an area (a 0.03 x 0.03 degree box, 9% of the extent) and rerun only it
area="11.47,48.07,11.50,48.10"
in_area="ST_Intersects(geom, ST_MakeEnvelope(11.47, 48.07, 11.50, 48.10, 4326))" # what a WFS BBOX selects
before=$(sql "SELECT count(*) FROM rec_full WHERE $in_area")
sql "DELETE FROM rec_full WHERE $in_area" >/dev/null
start_wfs; run "$out/rec_full.yaml" --bbox "$area"; stop_wfs; bbox=$served
after=$(sql "SELECT count(*) FROM rec_full WHERE $in_area")
printf 'bbox rerun: %s of %s rows of the area restored with %s requests (%.1f%% of a full run)\n' "$after" "$before" "$bbox" "$(awk -v a="$bbox" -v b="$full" 'BEGIN{print 100*a/b}')"

# 3. kill once 30% of the rows are in, then resume
start_wfs; "$bin" run "$(flow rec_kill)" --progress off --log-level error >>"$out/run.log" 2>&1 & run_pid=$!
target=$(( features * 30 / 100 ))
until [ "$(sql "SELECT coalesce((SELECT count(*) FROM rec_kill), 0)" 2>/dev/null || echo 0)" -ge "$target" ]; do
  kill -0 $run_pid 2>/dev/null || { echo "the run ended before 30%" >&2; exit 1; }; sleep 0.05; done
kill -9 $run_pid; wait $run_pid 2>/dev/null || true
killed_at=$(sql "SELECT count(*) FROM rec_kill"); stop_wfs; before_kill=$served
start_wfs; run "$out/rec_kill.yaml" --resume; stop_wfs; resume=$served
final=$(sql "SELECT count(*) FROM rec_kill"); distinct=$(sql "SELECT count(DISTINCT gf_feature_id) FROM rec_kill")
printf 'kill at %s rows (%d%%) then --resume: %s rows, %s distinct; the resume made %s requests (%.1f%% of a full run; %s before the kill)\n' \
  "$killed_at" "$(( 100 * killed_at / features ))" "$final" "$distinct" "$resume" "$(awk -v a="$resume" -v b="$full" 'BEGIN{print 100*a/b}')" "$before_kill"

# 4. one URL in five failing forever, then healed and replayed
start_wfs --fail-one-in 5; code=0; run "$(flow rec_dead)" || code=$?; stop_wfs
count_open() { "$bin" dlq list --flow rec_dead --json | { grep -o '"id":' || true; } | wc -l; }
open=$(count_open)
stored=$(sql "SELECT count(*) FROM rec_dead")
echo "with one URL in five failing: exit $code, $open open dead letters, $stored of $features rows stored"
"$bin" dlq list --flow rec_dead >"$out/dlq.txt"; sed -n 1,6p "$out/dlq.txt"
start_wfs; code=0; "$bin" dlq replay --all --flow rec_dead --log-level error >"$out/replay.log" 2>&1 || code=$?; stop_wfs
left=$(count_open)
echo "healed, dlq replay --all: exit $code, $left open; $(sql "SELECT count(*) FROM rec_dead") rows, $(sql "SELECT count(DISTINCT gf_feature_id) FROM rec_dead") distinct"
tail -3 "$out/replay.log"
