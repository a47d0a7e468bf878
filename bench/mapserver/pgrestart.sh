#!/usr/bin/env bash
# bench/mapserver/pgrestart.sh: PostgreSQL restarted in the middle of a harvest from a REAL
# MapServer WFS whose own data lives in that same PostgreSQL.
#
#   bash bench/mapserver/pgrestart.sh bin/geoflow      (what `make bench-mapserver` runs)
#   FEATURES=20000 RESTART_AT=50 CONCURRENCY=8 bash bench/mapserver/pgrestart.sh bin/geoflow
#   DOWN_SECONDS=10 bash bench/mapserver/pgrestart.sh bin/geoflow    (stop, wait, start instead)
#
# bench/pgrestart.sh does this against geoflow's own sample WFS, which keeps serving while
# the database is away. Here the WFS is Debian's MapServer 8 CGI (cgi-mapserver, installed
# when missing) reading a PostGIS table in the throwaway cluster that geoflow writes to, so
# the server fails too while the database restarts: MapServer then answers HTTP 400 with an
# ows:ExceptionReport, exceptionCode="NoApplicableCode", "msPostGISLayerOpen(): Query error.
# Database connection failed." (the server's backend failing, which geoflow should retry).
#
#  1. a throwaway PostGIS cluster (internal/testdb/postgis.sh start); FEATURES parcels
#     (default 100,000) from `geoflow dev wfs`, harvested by geoflow into src_parcels with an
#     integer key id;
#  2. a mapfile (WFS 2.0.0, EPSG:4326, CONNECTIONTYPE POSTGIS over src_parcels, GeoJSON via
#     OGR, gml_featureid id, 1,000 features a page) served by bench/mapserver/main.go, which
#     runs /usr/lib/cgi-bin/mapserv per request (net/http/cgi) on a free loopback port and
#     logs each answer; checked with curl (capabilities, hits, a small GetFeature) and ogrinfo;
#  3. `geoflow run` of a one-task flow (CONCURRENCY units in flight, default 16) into
#     restart_parcels; once RESTART_AT% (default 30) of the rows are in, a curl probe starts
#     asking MapServer for a count and a schema, and two seconds later `pg_ctl restart -m
#     fast` (with DOWN_SECONDS, `pg_ctl stop -m fast`, that many seconds, `pg_ctl start`: a
#     bare restart is over in a second or two, and a mapserv process can take that long to
#     reach its database, so few requests, sometimes none, meet the outage);
#  4. the report: the restart, the run's exit code and status, rows and distinct features
#     against the source, open dead letters, what MapServer answered geoflow and the probe,
#     what geoflow logged about the outage, and its per-host summary line. If the run did not
#     end done with every feature, `--resume` is run and reported the same way, and then, if
#     features are still missing and dead letters open, `geoflow dlq replay --all --flow`.
#  5. everything it started (servers, run, cluster) is stopped on exit, failure included;
#     the logs are kept (and their directory named) when the script fails, or with KEEP=1.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-bin/geoflow}
features=${FEATURES:-100000}
restart_at=${RESTART_AT:-30}
concurrency=${CONCURRENCY:-16}
down=${DOWN_SECONDS:-0}
mapserv=/usr/lib/cgi-bin/mapserv
flow=mapserver_pg_restart
log() { printf 'pgrestart.sh: %s\n' "$*" >&2; }

# --- MapServer: Debian's CGI, installed as postgis.sh installs PostGIS -----------------------
if [ ! -x "$mapserv" ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null && sudo="sudo -n" || {
      log "$mapserv is missing and I am not root: install cgi-mapserver"; exit 1; }
  fi
  log "installing cgi-mapserver from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends cgi-mapserver >>/tmp/geoflow-apt.log 2>&1 ||
    { $sudo apt-get update -qq >>/tmp/geoflow-apt.log 2>&1 || true
      $sudo apt-get install -y -qq --no-install-recommends cgi-mapserver >>/tmp/geoflow-apt.log 2>&1; } ||
    { log "apt-get install cgi-mapserver failed (see /tmp/geoflow-apt.log)"; exit 1; }
fi

out=$(mktemp -d /tmp/geoflow-mapserver.XXXXXX)
dir=""; wfs_pid=""; ms_pid=""; run_pid=""; probe_pid=""
cleanup() {
  local code=$?
  for p in $probe_pid $run_pid $wfs_pid $ms_pid; do kill "$p" 2>/dev/null || true; done
  for p in $probe_pid $run_pid $wfs_pid $ms_pid; do wait "$p" 2>/dev/null || true; done
  [ -n "$dir" ] && bash "$root/internal/testdb/postgis.sh" stop "$dir"
  if [ "$code" != 0 ]; then log "failed; logs kept in $out"
  elif [ -n "${KEEP:-}" ]; then log "logs kept in $out"; else rm -rf "$out"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM # so that an interrupted benchmark cleans up too

read -r db dir < <(bash "$root/internal/testdb/postgis.sh" start)
[ -n "$dir" ] || { log "no database"; exit 1; }
[[ $db =~ ^postgres://([^@]+)@([^:/]+):([0-9]+)/([^?]+) ]] || { log "cannot read $db"; exit 1; }
pg_user=${BASH_REMATCH[1]} pg_host=${BASH_REMATCH[2]} pg_port=${BASH_REMATCH[3]} pg_db=${BASH_REMATCH[4]}
pgbin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
export GEOFLOW_DATABASE_URL=$db
sql() { psql -X -qtA "$db" -c "$1"; }
free_port() { local p; for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 12000 ))
  (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return 0; }; done; return 1; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
"$bin" migrate up >/dev/null

# --- 1. the source table: geoflow's sample parcels, with an integer key ----------------------
port=$(free_port)
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" >"$out/devwfs.log" 2>&1 & wfs_pid=$!
wait_port "$port" || { log "the sample WFS did not start"; cat "$out/devwfs.log" >&2; exit 1; }
cat >"$out/load.yaml" <<YAML
name: mapserver_bench_load
tasks:
  parcels:
    type: wfs
    url: http://127.0.0.1:$port/wfs
    typename: gf:parcels
    target: {table: src_load}
YAML
"$bin" run "$out/load.yaml" --progress off >"$out/load.log" 2>&1 || { log "loading the source failed"; tail "$out/load.log" >&2; exit 1; }
kill "$wfs_pid"; wait "$wfs_pid" 2>/dev/null || true; wfs_pid=""
psql -X -q -v ON_ERROR_STOP=1 "$db" >/dev/null <<'SQL'
CREATE TABLE src_parcels AS
  SELECT substr(parcel_id, 4)::integer AS id, parcel_id, cadastre_no, area_m2, zone, land_use,
         owner_count, assessed_value, is_public, surveyed, updated_at, geom
  FROM src_load;
ALTER TABLE src_parcels ADD PRIMARY KEY (id);
CREATE INDEX ON src_parcels USING gist (geom);
DROP TABLE src_load;
ANALYZE src_parcels;
SQL
source_n=$(sql "SELECT count(*) FROM src_parcels")
[ "$source_n" = "$features" ] || { log "src_parcels holds $source_n rows, not $features"; exit 1; }
extent=$(sql "SELECT concat_ws(' ', ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e)) FROM (SELECT ST_Extent(geom) AS e FROM src_parcels) s")

# --- 2. MapServer over src_parcels ------------------------------------------------------------
cat >"$out/mapserver.conf" <<CONF
CONFIG
  ENV
    MS_MAP_NO_PATH "1"       # maps by alias only (?map=PARCELS), as a careful deployment does
    MS_ERRORFILE "stderr"
  END
  MAPS
    PARCELS "$out/parcels.map"
  END
END
CONF
cat >"$out/parcels.map" <<MAPFILE
MAP
  NAME "parcels"
  STATUS ON
  EXTENT $extent
  PROJECTION "init=epsg:4326" END
  OUTPUTFORMAT
    NAME "geojson"
    DRIVER "OGR/GEOJSON"
    MIMETYPE "application/json; subtype=geojson"
    FORMATOPTION "STORAGE=stream"
    FORMATOPTION "FORM=SIMPLE"
    # OGR output ignores gml_featureid: without this the GeoJSON features carry no "id".
    FORMATOPTION "LCO:ID_FIELD=id"
  END
  WEB
    METADATA
      "ows_enable_request" "*"
      "wfs_title" "geoflow bench: parcels in PostGIS"
      "wfs_srs" "EPSG:4326"
      "wfs_namespace_prefix" "ms"
      "wfs_maxfeatures" "1000"               # advertised as CountDefault
      "wfs_getfeature_formatlist" "geojson"
    END
  END
  LAYER
    NAME "parcels"
    TYPE POLYGON
    STATUS ON
    CONNECTIONTYPE POSTGIS
    CONNECTION "host=$pg_host port=$pg_port dbname=$pg_db user=$pg_user"
    DATA "geom FROM src_parcels USING UNIQUE id USING SRID=4326"
    EXTENT $extent
    PROJECTION "init=epsg:4326" END
    METADATA
      "wfs_title" "parcels"
      "gml_featureid" "id"
      "gml_include_items" "all"
      "gml_types" "auto"
    END
  END
END
MAPFILE
(cd "$root" && go build -o "$out/mscgi" ./bench/mapserver)
"$out/mscgi" -mapserv "$mapserv" -config "$out/mapserver.conf" -access-log "$out/access.log" >"$out/addr" 2>"$out/mapserv.log" & ms_pid=$!
for _ in $(seq 1 100); do [ -s "$out/addr" ] && break; sleep 0.1; done
[ -s "$out/addr" ] || { log "the MapServer CGI server did not start"; cat "$out/mapserv.log" >&2; exit 1; }
url="http://$(head -1 "$out/addr")/mapserv?map=PARCELS"
wfs() { curl -sS --max-time 60 "$url&SERVICE=WFS&$1"; }
wfs "REQUEST=GetCapabilities&ACCEPTVERSIONS=2.0.0" >"$out/caps.xml"
grep -q '<Name>ms:parcels</Name>' "$out/caps.xml" && grep -q 'application/json; subtype=geojson' "$out/caps.xml" ||
  { log "the capabilities lack ms:parcels or GeoJSON:"; head -c 2000 "$out/caps.xml" >&2; exit 1; }
count_default=$(grep -A2 'Constraint name="CountDefault"' "$out/caps.xml" | sed -nE 's/.*<ows:DefaultValue>([0-9]+)<.*/\1/p')
hits=$(wfs "VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=ms:parcels&RESULTTYPE=hits" | sed -nE 's/.*numberMatched="([0-9]+)".*/\1/p')
[ "$hits" = "$features" ] || { log "MapServer counts ${hits:-nothing}, not $features"; exit 1; }
small=$(wfs "VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=ms:parcels&COUNT=5&OUTPUTFORMAT=application/json;%20subtype=geojson" |
  grep -c '"type": "Feature", "id": ' || true)
[ "$small" = 5 ] || { log "a GetFeature of 5 GeoJSON features with ids returned $small"; exit 1; }
# Only the layer list: for a feature count (-so), GDAL 3.6 fetched the whole layer here, 100
# features a page, with a DescribeFeatureType per page (19 minutes for 100,000 features).
ogr=$(ogrinfo -ro -q "WFS:$url" 2>/dev/null | sed -nE 's/^1: (.*)/\1/p' || true)
printf '%s WFS at %s: WFS 2.0.0, CountDefault %s, GeoJSON offered; hits %s; GetFeature COUNT=5: %s GeoJSON features with ids; ogrinfo lists %s\n' \
  "$("$mapserv" -v | cut -d' ' -f1-3)" "$url" "$count_default" "$hits" "$small" "${ogr:-nothing}"
cp "$out/access.log" "$out/checks.log"; : >"$out/access.log" # the harvest's answers only from here on

# --- 3. the harvest, and the restart under it -------------------------------------------------
cat >"$out/restart.yaml" <<YAML
name: $flow
tasks:
  parcels:
    type: wfs
    url: $url
    typename: ms:parcels
    rate_limit: {concurrency: $concurrency}
    target: {table: restart_parcels}
YAML
# restart_db restarts the cluster; with DOWN_SECONDS it stops it, waits, and starts it with
# the options it ran with, for an outage longer than a MapServer process takes to start.
restart_db() {
  if [ "$down" = 0 ]; then as_pg "$pgbin/pg_ctl" -D "$dir/data" restart -m fast -w; return; fi
  local opts; opts=$(sed -E 's/^[^ ]+ "-D" "[^"]*" ?//' "$dir/data/postmaster.opts")
  as_pg "$pgbin/pg_ctl" -D "$dir/data" stop -m fast -w && sleep "$down" &&
    as_pg "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.down.log" -w -o "$opts" start
}
# A probe asks MapServer for a count and for the schema (which geoflow reads when a run
# starts) every quarter second, from two seconds before the restart (a mapserv process
# reaches its database a second or more after the request arrives) until PostgreSQL is
# back; its answers are in the access log, as client curl.
probe() {
  while [ ! -e "$out/probe.stop" ]; do
    for q in "REQUEST=GetFeature&TYPENAMES=ms:parcels&RESULTTYPE=hits" "REQUEST=DescribeFeatureType&TYPENAMES=ms:parcels"; do
      curl -s -o /dev/null --max-time 60 "$url&SERVICE=WFS&VERSION=2.0.0&$q" &
    done
    sleep 0.25
  done
  wait
}
start=$(date +%s.%N)
"$bin" run "$out/restart.yaml" --progress off --log-format text >"$out/run.log" 2>&1 & run_pid=$!
target=$(( features * restart_at / 100 ))
until [ "$(sql "SELECT coalesce((SELECT count(*) FROM restart_parcels), 0)" 2>/dev/null || echo 0)" -ge "$target" ]; do
  kill -0 $run_pid 2>/dev/null || { log "the run ended before ${restart_at}%"; cat "$out/run.log" >&2; exit 1; }; sleep 0.05; done
probe & probe_pid=$!
sleep 2
at=$(sql "SELECT count(*) FROM restart_parcels")
t0=$(date +%s.%N)
restart_db >"$out/pgctl.log" 2>&1 || { log "restarting PostgreSQL failed:"; cat "$out/pgctl.log" >&2; exit 1; }
t1=$(date +%s.%N)
touch "$out/probe.stop"
if [ "$down" = 0 ]; then how="restarted PostgreSQL (pg_ctl restart -m fast)"
else how="stopped PostgreSQL (pg_ctl stop -m fast) for $down s, then started it,"; fi
printf '%s at %s of %s rows; it was back after %s s\n' "$how" "$at" "$features" "$(secs "$t0" "$t1")"
wait "$probe_pid" || true; probe_pid=""
code=0; wait $run_pid || code=$?; run_pid=""
end=$(date +%s.%N)

# --- 4. the report ----------------------------------------------------------------------------
# missing: source features whose key is in no row of restart_parcels.
missing() { sql "SELECT count(*) FROM src_parcels s WHERE NOT EXISTS (SELECT 1 FROM restart_parcels r WHERE r.gf_feature_id = s.id::text)"; }
report() {
  local rows distinct open
  rows=$(sql "SELECT count(*) FROM restart_parcels")
  distinct=$(sql "SELECT count(DISTINCT gf_feature_id) FROM restart_parcels")
  open=$(sql "SELECT count(*) FROM geoflow.geoflow_dlq WHERE status = 'open' AND flow = '$flow'")
  printf '%s: exit %s, run %s; %s rows, %s distinct gf_feature_id of %s source rows (%s missing); %s open dead letters\n' "$1" "$2" \
    "$(sql "SELECT status FROM geoflow.geoflow_runs ORDER BY id DESC LIMIT 1")" "$rows" "$distinct" "$source_n" "$(missing)" "$open"
}
# outage_log FILE: geoflow's lines about the outage, grouped by level, message, and the
# reason, status and class they give.
outage_log() {
  grep -E '^time=.*(store failed|answers again|writing the unit again|breaker|retrying|unit failed|could not be recorded|INCOMPLETE|task finished with a problem)' "$1" |
    awk '{ s = ""
      if (match($0, /level=[A-Z]+/)) s = substr($0, RSTART, RLENGTH)
      if (match($0, /msg="[^"]*"/) || match($0, /msg=[^ ]+/)) s = s " " substr($0, RSTART, RLENGTH)
      rest = $0
      while (match(rest, / (reason|status|class)=[^ ]+/)) { s = s substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH) }
      print s }' | sort | uniq -c | sort -rn | head -12 || true
}
# answers FILE CLIENT: MapServer's answers to one client, grouped by status, request and exception.
answers() {
  awk -v c="$2" '$4 == c { $1 = ""; $3 = ""; $4 = ""; print }' "$1" | sed -E 's/^ +//; s/ +/ /g' |
    sort | uniq -c | sort -rn | head -12 || true
}
report "run ($(secs "$start" "$end") s)" "$code"
awk -v t0="$t0" '$4 == "geoflow" && $2 != 200 { n++; d = $1 + $3 - t0; if (n == 1 || d < lo) lo = d; if (n == 1 || d > hi) hi = d }
  END { if (n) printf "MapServer failed %d of geoflow'"'"'s requests, answering them from %.1f s to %.1f s after the restart began\n", n, lo, hi
        else print "MapServer failed none of geoflow'"'"'s requests" }' "$out/access.log"
echo "what MapServer answered the probe, from 2 s before the restart until PostgreSQL was back (HTTP status, request, exception):"
answers "$out/access.log" curl
echo "what MapServer answered geoflow (HTTP status, request, exception):"
answers "$out/access.log" geoflow
echo "what geoflow logged about the outage:"
outage_log "$out/run.log"
grep -E '^  host ' "$out/run.log" || true
# again NAME LOG CMD...: run a recovery command and report it like the run.
again() {
  local name=$1 file=$2 t code=0; shift 2
  : >"$out/access.log"
  t=$(date +%s.%N)
  "$@" >"$file" 2>&1 || code=$?
  report "$name ($(secs "$t" "$(date +%s.%N)") s)" "$code"
  grep -m1 -E '^(geoflow|Error):' "$file" || true # a refusal says why
  echo "what MapServer answered it:"
  answers "$out/access.log" geoflow
  echo "what geoflow logged:"
  outage_log "$file"
  grep -E '^  host ' "$file" || true
  return "$code"
}
if [ "$code" != 0 ] || [ "$(sql "SELECT status FROM geoflow.geoflow_runs ORDER BY id DESC LIMIT 1")" != done ] || [ "$(missing)" != 0 ]; then
  again "--resume" "$out/resume.log" "$bin" run "$out/restart.yaml" --resume --progress off --log-format text || true
  # A run whose units all ended, done or dead, is finished: --resume refuses it, and its
  # dead letters are what is left to execute again.
  if [ "$(missing)" != 0 ] && [ "$(sql "SELECT count(*) FROM geoflow.geoflow_dlq WHERE status = 'open' AND flow = '$flow'")" != 0 ]; then
    again "dlq replay --all --flow $flow" "$out/replay.log" "$bin" dlq replay --all --flow "$flow" --log-format text || true
  fi
fi
