#!/usr/bin/env bash
# bench/diskfull.sh: the disk under a GeoPackage target fills up in the middle of a harvest.
#
#   sudo bash bench/diskfull.sh bin/geoflow          (what `make bench-diskfull` runs; needs root to mount)
#   WINDOW=120 SIZE=3m STORE_WAIT=30s bash bench/diskfull.sh bin/geoflow
#
# Mounts a SIZE tmpfs (default 3m) and harvests FEATURES parcels (default 20,000: about
# 10 MB in a GeoPackage) from the sample WFS into a GeoPackage on it, so the disk fills up
# part way. The run is watched for WINDOW seconds (default 90); a run still going then is
# sent SIGTERM, and SIGKILL if it is still going 60s later. A binary with --store-wait gets
# STORE_WAIT (default 20s). It reports: the log lines the run wrote in the window at info
# level and up (all, errors, those about the store), its exit code, the state its history
# shows, and for a binary that logs them (at debug level), the waits before its probes of
# the store. Then the disk is grown to 64m and `geoflow run --resume` is reported: exit
# code, rows and distinct features against the server's count.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(realpath "${1:-bin/geoflow}")
features=${FEATURES:-20000}
size=${SIZE:-3m}
window=${WINDOW:-90}
store_wait=${STORE_WAIT:-20s}
[ "$(id -u)" = 0 ] || { echo "bench/diskfull.sh mounts a tmpfs: run it as root" >&2; exit 1; }
out=$(mktemp -d)
disk=$out/disk
mkdir -p "$disk"
mount -t tmpfs -o size="$size" geoflow-diskfull "$disk"
wfs_pid=""; run_pid=""
cleanup() { kill "$wfs_pid" "$run_pid" 2>/dev/null || true; wait 2>/dev/null || true; umount "$disk" 2>/dev/null || true; }
trap cleanup EXIT
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
port=$(free_port)
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" --count-default 500 >"$out/wfs.log" 2>&1 & wfs_pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
cat >"$out/diskfull.yaml" <<YAML
name: diskfull
defaults:
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:$port/wfs
    typename: gf:parcels
    bbox: [11.44, 48.04, 11.56, 48.16]
    target: {table: parcels}
YAML
gpkg=$disk/geoflow.gpkg
extra=()
if "$bin" run --help 2>&1 | grep -q -- '--store-wait'; then extra=(--store-wait "$store_wait"); fi
echo "binary: $bin ($("$bin" version 2>/dev/null | head -1)); tmpfs of $size; $features features; window ${window}s; ${extra[*]:-no --store-wait flag}"
start=$(date +%s.%N)
"$bin" --database "$gpkg" run "$out/diskfull.yaml" --progress off --log-format text --log-level debug "${extra[@]}" >"$out/run.log" 2>&1 & run_pid=$!
ended=""
until_s=$(( $(date +%s) + window ))
while [ "$(date +%s)" -lt "$until_s" ]; do kill -0 $run_pid 2>/dev/null || { ended=yes; break; }; sleep 0.1; done
# What it logged in the window, at info level and up (debug lines are the probes' waits).
grep -v 'level=DEBUG' "$out/run.log" >"$out/window.log" || true
lines=$(wc -l <"$out/window.log")
errors=$(grep -c 'level=ERROR' "$out/window.log" || true)
about=$(grep -Eci 'store|writing the unit again' "$out/window.log" || true)
stop=""
if [ -z "$ended" ]; then
  kill -TERM $run_pid
  until_s=$(( $(date +%s) + 60 ))
  while [ "$(date +%s)" -lt "$until_s" ]; do kill -0 $run_pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $run_pid 2>/dev/null; then kill -KILL $run_pid; stop="; still going after ${window}s: SIGTERM, and SIGKILL 60s later"
  else stop="; still going after ${window}s: SIGTERM"; fi
fi
code=0; wait $run_pid 2>/dev/null || code=$?; run_pid=""
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
state() { "$bin" --database "$gpkg" runs list --flow diskfull --limit 1 --json | grep -o '"status": *"[a-z]*"' | head -1 | sed 's/.*"\([a-z]*\)"$/\1/'; }
echo "in the first ${window}s: $lines log lines, $errors at level ERROR, $about about the store"
echo "run: exit $code after ${secs}s$stop; the run reads $(state); df: $(df -h --output=used,size "$disk" | tail -1 | xargs)"
echo "what it logged about the store (count, level, message):"
grep -v 'level=DEBUG' "$out/run.log" | grep -Ei 'store|writing the unit again' | sed -E 's/^time=[^ ]+ (level=[A-Z]+) msg=("[^"]*").*/\1 \2/' | sort | uniq -c | sort -rn | head -8 || true
if grep -q 'probe_in=' "$out/run.log"; then
  echo "waits before each probe of the store: $(grep -o 'probe_in=[^ ]*' "$out/run.log" | cut -d= -f2 | tr '\n' ' ')"
fi
grep -E '^run [0-9]+ of|stayed' "$out/run.log" | grep -v level=DEBUG | cut -c1-400 || true
mount -o remount,size=64m "$disk"
code=0; "$bin" --database "$gpkg" run "$out/diskfull.yaml" --resume --progress off >"$out/resume.log" 2>&1 || code=$?
lite() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(sys.argv[2]).fetchone()[0])' "$gpkg" "$1"; }
echo "--resume with the disk grown to 64m: exit $code, run $(state); $(lite 'SELECT count(*) FROM parcels') rows, $(lite 'SELECT count(DISTINCT gf_feature_id) FROM parcels') distinct of $features"
