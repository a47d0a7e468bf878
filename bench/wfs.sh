#!/usr/bin/env bash
# bench/wfs.sh: geoflow vs the raw download limit vs ogr2ogr, one WFS layer into PostGIS.
#
#   make bench                       # 100,000 features, plus geoflow's peak RSS at 1,000,000
#   FEATURES=20000 RSS_FEATURES=0 bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/wfs.sh bin/geoflow
#
# The sample WFS (geoflow dev wfs) serves FEATURES polygons of about 17 vertices and 8
# attributes. The raw limit is the same data fetched with curl as GeoJSON in bbox tiles of
# at most one page each, 4 at a time (one curl process, --parallel-max 4), to /dev/null. ogr2ogr comes from Debian's
# gdal-bin (installed when missing) and pages through the layer as it does by default.
set -euo pipefail
bin=${1:-bin/geoflow}
features=${FEATURES:-100000}
rss_features=${RSS_FEATURES:-1000000}
grid=${GRID:-20}            # raw limit: GRID x GRID tiles
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
out=${BENCH_OUT:-/tmp/geoflow-bench}
mkdir -p "$out"

need() { command -v "$1" >/dev/null || { echo "bench: installing $2" >&2; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }; }
need ogr2ogr gdal-bin
need curl curl
need psql postgresql-client
[ -x /usr/bin/time ] || need /usr/bin/time time

free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }

start_wfs() { # features [server cost flags] -> sets wfs_pid, url
  local port n=$1; shift; port=$(free_port)
  "$bin" dev wfs --listen 127.0.0.1:$port --features "$n" --count-default 1000 "$@" >"$out/wfs.log" 2>&1 &
  wfs_pid=$!
  url="http://127.0.0.1:$port/wfs"
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.1; done
  echo "bench: the sample WFS did not start" >&2; cat "$out/wfs.log" >&2; exit 1
}
stop_wfs() { kill "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true; }
trap stop_wfs EXIT

# measure NAME CMD...: wall seconds and peak RSS (MB) of CMD into $out/NAME.{secs,rss}
measure() {
  local name=$1; shift
  /usr/bin/time -f '%e %M' -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1 || { echo "bench: $name failed:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
  read -r secs kb <"$out/$name.time"
  echo "$secs" >"$out/$name.secs"; echo $(( kb / 1024 )) >"$out/$name.rss"
}

flow() { # table bbox -> flow file
  cat >"$out/flow-$1.yaml" <<YAML
name: bench_$1
defaults:
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: $url
    typename: gf:parcels
    bbox: [11.44, 48.04, 11.56, 48.16]
    target: {table: $1}
YAML
  echo "$out/flow-$1.yaml"
}

sql() { psql -X -qtA "$db" -c "$1"; }

# The modelled server: a PostGIS-backed WFS on another machine. 2 us of database time per
# row read (OFFSET reads and discards the skipped rows, so deep pages cost more) and 25 us
# per feature encoded as GeoJSON, 50 us as GML (FIELD-NOTES: GeoJSON about twice as fast).
modelled=${MODELLED:---row-cost 2us --encode-cost 25us}

# compare PROFILE [server flags...]: raw limit, geoflow and ogr2ogr against one server.
compare() {
  local profile=$1; shift
  start_wfs "$features" "$@"
  echo "bench: $profile server, $features features at $url" >&2

  # 1. the raw limit: curl in bbox tiles, 4 at a time
  awk -v g="$grid" -v u="$url" 'BEGIN {
    x0 = 11.44; y0 = 48.04; w = 0.12 / g
    for (i = 0; i < g; i++) for (j = 0; j < g; j++)
      printf "%s?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=gf:parcels&OUTPUTFORMAT=application/json&COUNT=1000&SRSNAME=EPSG:4326&BBOX=%.6f,%.6f,%.6f,%.6f,urn:ogc:def:crs:EPSG::4326\n", u, y0 + j*w, x0 + i*w, y0 + (j+1)*w, x0 + (i+1)*w
  }' >"$out/tiles.txt"
  # One curl process for all tiles (--parallel-max 4): starting a process per tile would
  # measure process start-up, not the server.
  awk '{ printf "url = \"%s\"\noutput = \"/dev/null\"\n", $0 }' "$out/tiles.txt" >"$out/tiles.curlrc"
  measure raw-$profile curl -sS --fail --parallel --parallel-max 4 -K "$out/tiles.curlrc"

  # 2. geoflow end to end
  sql "DROP TABLE IF EXISTS gf_bench; DROP TABLE IF EXISTS ogr_bench" >/dev/null 2>&1
  measure geoflow-$profile "$bin" run "$(flow gf_bench)" --progress off
  local gf_rows gf_distinct ogr_rows ogr_distinct
  gf_rows=$(sql "SELECT count(*) FROM gf_bench"); gf_distinct=$(sql "SELECT count(DISTINCT gf_feature_id) FROM gf_bench")

  # 3. ogr2ogr with paging (GDAL pages with STARTINDEX, one request at a time)
  measure ogr2ogr-$profile ogr2ogr -f PostgreSQL "PG:$(echo "$db" | sed -E 's#^postgres(ql)?://([^@/]*)@([^:/]*):([0-9]*)/([^?]*).*#host=\3 port=\4 user=\2 dbname=\5#')" \
    "WFS:$url" gf:parcels -nln ogr_bench -lco GEOMETRY_NAME=geom -lco FID=ogc_fid \
    --config OGR_WFS_PAGING_ALLOWED ON --config OGR_WFS_PAGE_SIZE 1000 --config PG_USE_COPY YES
  ogr_rows=$(sql "SELECT count(*) FROM ogr_bench"); ogr_distinct=$(sql "SELECT count(DISTINCT parcel_id) FROM ogr_bench")
  stop_wfs

  local raw gfs ogs
  raw=$(cat "$out/raw-$profile.secs"); gfs=$(cat "$out/geoflow-$profile.secs"); ogs=$(cat "$out/ogr2ogr-$profile.secs")
  {
    printf '| %s | raw limit (curl, %dx%d bbox tiles, 4 at a time) | %s | 1.00x | - | - | - |\n' "$profile" "$grid" "$grid" "$raw"
    printf '| %s | geoflow | %s | %.2fx | %s | %s | %s |\n' "$profile" "$gfs" "$(awk -v a="$gfs" -v b="$raw" 'BEGIN{print a/b}')" "$gf_rows" "$gf_distinct" "$(cat "$out/geoflow-$profile.rss")"
    printf '| %s | ogr2ogr (GDAL %s, paging) | %s | %.2fx | %s | %s | %s |\n' "$profile" "$(ogr2ogr --version | awk '{print $2}' | tr -d ,)" "$ogs" "$(awk -v a="$ogs" -v b="$raw" 'BEGIN{print a/b}')" "$ogr_rows" "$ogr_distinct" "$(cat "$out/ogr2ogr-$profile.rss")"
  } >>"$out/table.md"
  printf '%s server: geoflow %.2fx faster than ogr2ogr\n' "$profile" "$(awk -v a="$ogs" -v b="$gfs" 'BEGIN{print a/b}')" >>"$out/ratios.txt"
}

: >"$out/table.md"; : >"$out/ratios.txt"
compare instant
# shellcheck disable=SC2086 # the flags are meant to split
compare modelled $modelled

# 4. peak RSS at a million features (instant server: the most pressure on geoflow)
rss_big=""
if [ "$rss_features" -gt 0 ]; then
  start_wfs "$rss_features"
  sql "DROP TABLE IF EXISTS gf_big" >/dev/null 2>&1
  measure geoflow_big "$bin" run "$(flow gf_big)" --progress off
  big_distinct=$(sql "SELECT count(DISTINCT gf_feature_id) FROM gf_big")
  rss_big="$(cat "$out/geoflow_big.rss") MB peak RSS, $(cat "$out/geoflow_big.secs") s, $big_distinct distinct of $rss_features"
  stop_wfs
fi

printf '\n%s features; server profiles: instant = the sample WFS at full speed on this machine; modelled = %s\n\n' "$features" "$modelled"
printf '| server | tool | time (s) | vs raw limit | rows | distinct features | peak RSS (MB) |\n|---|---|---|---|---|---|---|\n'
cat "$out/table.md"
echo; cat "$out/ratios.txt"
[ -n "$rss_big" ] && printf 'geoflow at %s features: %s\n' "$rss_features" "$rss_big"
exit 0
