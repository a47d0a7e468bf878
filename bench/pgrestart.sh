#!/usr/bin/env bash
# bench/pgrestart.sh: PostgreSQL restarted in the middle of a harvest.
#
#   bash bench/pgrestart.sh bin/geoflow          (what `make bench-pgrestart` runs)
#
# Starts a throwaway PostGIS cluster of its own (it must restart it), the sample WFS with
# a real server's costs (so a 100,000-feature harvest takes long enough to be cut), and
# `geoflow run` of a one-task flow with 16 units in flight. Once RESTART_AT (default 30%)
# of the features are in, `pg_ctl restart -m fast` restarts the database under it. Then
# it reports: the run's exit code and status, rows and distinct features against the
# server's count, open dead letters, how geoflow saw the outage (its log), the WFS host's
# retries and whether its circuit breaker ever opened. If the run ended interrupted or
# failed, `--resume` is run and reported the same way.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${1:-bin/geoflow}
features=${FEATURES:-100000}
restart_at=${RESTART_AT:-30}
out=$(mktemp -d)
read -r db dir < <(bash "$here/../internal/testdb/postgis.sh" start)
pgbin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
wfs_pid=""; run_pid=""
cleanup() { kill "$wfs_pid" "$run_pid" 2>/dev/null || true; bash "$here/../internal/testdb/postgis.sh" stop "$dir"; }
trap cleanup EXIT
export GEOFLOW_DATABASE_URL=$db
sql() { psql -X -qtA "$db" -c "$1"; }
port=$(( 20000 + RANDOM % 10000 ))
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" --row-cost 2us --encode-cost 100us >"$out/wfs.log" 2>&1 & wfs_pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
cat >"$out/restart.yaml" <<YAML
name: pg_restart
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:$port/wfs
    typename: gf:parcels
    rate_limit: {concurrency: 16}
    target: {table: restart_parcels}
YAML
"$bin" migrate up >/dev/null
start=$(date +%s.%N)
"$bin" run "$out/restart.yaml" --progress off --log-format text >"$out/run.log" 2>&1 & run_pid=$!
target=$(( features * restart_at / 100 ))
until [ "$(sql "SELECT coalesce((SELECT count(*) FROM restart_parcels), 0)" 2>/dev/null || echo 0)" -ge "$target" ]; do
  kill -0 $run_pid 2>/dev/null || { echo "the run ended before ${restart_at}%" >&2; cat "$out/run.log" >&2; exit 1; }; sleep 0.05; done
at=$(sql "SELECT count(*) FROM restart_parcels")
t0=$(date +%s.%N)
as_pg "$pgbin/pg_ctl" -D "$dir/data" restart -m fast -w >"$out/pgctl.log" 2>&1
t1=$(date +%s.%N)
printf 'restarted PostgreSQL (pg_ctl restart -m fast) at %s of %s rows; it was back after %.1f s\n' "$at" "$features" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')"
code=0; wait $run_pid || code=$?; run_pid=""
end=$(date +%s.%N)
report() {
  local rows distinct open
  rows=$(sql "SELECT count(*) FROM restart_parcels"); distinct=$(sql "SELECT count(DISTINCT gf_feature_id) FROM restart_parcels")
  open=$(sql "SELECT count(*) FROM geoflow.geoflow_dlq WHERE status = 'open'")
  printf '%s: exit %s, run %s; %s rows, %s distinct of %s; %s open dead letters\n' "$1" "$2" \
    "$(sql "SELECT status FROM geoflow.geoflow_runs ORDER BY id DESC LIMIT 1")" "$rows" "$distinct" "$features" "$open"
}
report "run ($(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f s", b-a}'))" "$code"
echo "what geoflow logged about the outage and the WFS host:"
grep -E 'store failed|answers again|writing the unit again|breaker|retrying|unit failed|could not be recorded' "$out/run.log" \
  | grep -v '^  host ' | sed -E 's/^time=[^ ]+ (level=[A-Z]+) msg=("[^"]*").*/\1 \2/' | sort | uniq -c | sort -rn | head -12 || true
grep -E '^  host ' "$out/run.log" || true
if [ "$code" != 0 ]; then
  code=0; "$bin" run "$out/restart.yaml" --resume --progress off >"$out/resume.log" 2>&1 || code=$?
  report "--resume" "$code"
fi
