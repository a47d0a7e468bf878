#!/usr/bin/env bash
# bench/mapserver/ogcapi.sh: harvest a REAL MapServer 8 OGC API - Features endpoint over
# PostGIS with geoflow (type: ogcapi_features) and with ogr2ogr (OAPIF driver), in the same
# run, and compare both with the source table.
#
#   bash bench/mapserver/ogcapi.sh bin/geoflow          (what `make bench-ogcapi` runs)
#   FEATURES=20000 bash bench/mapserver/ogcapi.sh bin/geoflow
#
#  1. a throwaway PostGIS cluster (internal/testdb/postgis.sh start); FEATURES parcels
#     (default 100,000) from `geoflow dev wfs`, harvested into src_parcels with an integer key;
#  2. Debian's MapServer 8 CGI (installed when missing) serving src_parcels as OGC API -
#     Features (collection parcels, 1,000 features a page at most), run per request by
#     bench/mapserver/main.go; checked with curl (landing page, collection, a page of items);
#  3. `geoflow run` of a one-task flow into geoflow_parcels, timed;
#  4. `ogr2ogr -f GPKG ... OAPIF:<landing page> parcels -oo PAGE_SIZE=1000`, timed (it follows the rel=next links to the end);
#  5. the report: rows, distinct parcel_ids and time of each, and for geoflow's table the rows
#     whose attributes differ from the source and the largest Hausdorff distance between a
#     stored geometry and the source's (MapServer writes coordinates with limited precision).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-bin/geoflow}
features=${FEATURES:-100000}
mapserv=/usr/lib/cgi-bin/mapserv
log() { printf 'ogcapi.sh: %s\n' "$*" >&2; }

if [ ! -x "$mapserv" ] || ! command -v ogr2ogr >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null && sudo="sudo -n" || {
      log "cgi-mapserver or gdal-bin is missing and I am not root: install them"; exit 1; }
  fi
  log "installing cgi-mapserver and gdal-bin from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends cgi-mapserver gdal-bin >>/tmp/geoflow-apt.log 2>&1 ||
    { $sudo apt-get update -qq >>/tmp/geoflow-apt.log 2>&1 || true
      $sudo apt-get install -y -qq --no-install-recommends cgi-mapserver gdal-bin >>/tmp/geoflow-apt.log 2>&1; } ||
    { log "apt-get install failed (see /tmp/geoflow-apt.log)"; exit 1; }
fi

out=$(mktemp -d /tmp/geoflow-ogcapi.XXXXXX)
dir=""; wfs_pid=""; ms_pid=""
cleanup() {
  local code=$?
  for p in $wfs_pid $ms_pid; do kill "$p" 2>/dev/null || true; done
  for p in $wfs_pid $ms_pid; do wait "$p" 2>/dev/null || true; done
  [ -n "$dir" ] && bash "$root/internal/testdb/postgis.sh" stop "$dir"
  if [ "$code" != 0 ]; then log "failed; logs kept in $out"
  elif [ -n "${KEEP:-}" ]; then log "logs kept in $out"; else rm -rf "$out"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r db dir < <(bash "$root/internal/testdb/postgis.sh" start)
[ -n "$dir" ] || { log "no database"; exit 1; }
[[ $db =~ ^postgres://([^@]+)@([^:/]+):([0-9]+)/([^?]+) ]] || { log "cannot read $db"; exit 1; }
pg_user=${BASH_REMATCH[1]} pg_host=${BASH_REMATCH[2]} pg_port=${BASH_REMATCH[3]} pg_db=${BASH_REMATCH[4]}
export GEOFLOW_DATABASE_URL=$db
sql() { psql -X -qtA "$db" -c "$1"; }
free_port() { local p; for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 12000 ))
  (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return 0; }; done; return 1; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
"$bin" migrate up >/dev/null

# --- 1. the source table ---------------------------------------------------------------------
port=$(free_port)
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" >"$out/devwfs.log" 2>&1 & wfs_pid=$!
wait_port "$port" || { log "the sample WFS did not start"; cat "$out/devwfs.log" >&2; exit 1; }
cat >"$out/load.yaml" <<YAML
name: ogcapi_bench_load
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
         owner_count, assessed_value, is_public, surveyed, geom
  FROM src_load;
ALTER TABLE src_parcels ADD PRIMARY KEY (id);
CREATE INDEX ON src_parcels USING gist (geom);
DROP TABLE src_load;
ANALYZE src_parcels;
SQL
[ "$(sql "SELECT count(*) FROM src_parcels")" = "$features" ] || { log "src_parcels does not hold $features rows"; exit 1; }
extent=$(sql "SELECT concat_ws(' ', ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e)) FROM (SELECT ST_Extent(geom) AS e FROM src_parcels) s")

# --- 2. MapServer's OGC API - Features over src_parcels --------------------------------------
ms_port=$(free_port)
api="http://127.0.0.1:$ms_port/mapserv/PARCELS/ogcapi"
cat >"$out/mapserver.conf" <<CONF
CONFIG
  ENV
    MS_MAP_NO_PATH "1"
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
  WEB
    METADATA
      "oga_enable_request" "*"
      "oga_title" "geoflow bench: parcels in PostGIS"
      "oga_onlineresource" "$api"    # without it MapServer 8.0 writes broken links
      "oga_max_limit" "1000"
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
    TEMPLATE "void"                  # without it the collection is not queryable (404)
    METADATA
      "oga_title" "parcels"
      "gml_featureid" "id"
      "gml_include_items" "all"
      "gml_types" "auto"
    END
  END
END
MAPFILE
(cd "$root" && go build -o "$out/mscgi" ./bench/mapserver)
"$out/mscgi" -listen "127.0.0.1:$ms_port" -mapserv "$mapserv" -config "$out/mapserver.conf" -access-log "$out/access.log" >"$out/addr" 2>"$out/mapserv.log" & ms_pid=$!
wait_port "$ms_port" || { log "the MapServer CGI server did not start"; cat "$out/mapserv.log" >&2; exit 1; }
curl -sS --max-time 60 "$api?f=json" | grep -q '"rel":"data"' || { log "no landing page at $api"; exit 1; }
matched=$(curl -sS --max-time 120 "$api/collections/parcels/items?f=json&limit=1" | sed -nE 's/.*"numberMatched":([0-9]+).*/\1/p')
[ "$matched" = "$features" ] || { log "MapServer matches ${matched:-nothing}, not $features"; exit 1; }
page2=$(curl -sS --max-time 120 "$api/collections/parcels/items?f=json&limit=3&offset=3" | grep -oE '"id":"[0-9]+"' | head -3 | tr '\n' ' ')
page1=$(curl -sS --max-time 120 "$api/collections/parcels/items?f=json&limit=3" | grep -oE '"id":"[0-9]+"' | head -3 | tr '\n' ' ')
printf '%s OGC API - Features at %s: numberMatched %s; ids of limit=3: %s; of limit=3&offset=3: %s\n' \
  "$("$mapserv" -v | cut -d' ' -f1-3)" "$api" "$matched" "$page1" "$page2"
printf 'a feature as MapServer writes it: %s\n' "$(curl -sS --max-time 120 "$api/collections/parcels/items?f=json&limit=1" | grep -oE '"properties":\{[^}]*\}' | head -1)"

# --- 3. geoflow --------------------------------------------------------------------------------
cat >"$out/flow.yaml" <<YAML
name: ogcapi_bench
tasks:
  parcels:
    type: ogcapi_features
    url: $api
    collection: parcels
    target: {table: geoflow_parcels}
YAML
: >"$out/access.log" # the harvest's requests only from here on
t0=$(now)
set +e; "$bin" run "$out/flow.yaml" --progress off --log-format text >"$out/geoflow.log" 2>&1; gf_exit=$?; set -e
t1=$(now)
gf_time=$(secs "$t0" "$t1")
gf_rows=$(sql "SELECT count(*) FROM geoflow_parcels")
gf_distinct=$(sql "SELECT count(DISTINCT parcel_id) FROM geoflow_parcels")
gf_requests=$(grep -c 'ogcapi/collections/parcels/items' "$out/access.log" || true)

# --- 4. ogr2ogr ----------------------------------------------------------------------------------
: >"$out/access.log"
t0=$(now)
set +e
# GeoPackage, not PostgreSQL: MapServer writes "" for null numbers and dates, which COPY into
# PostgreSQL's typed columns refuses, and ogr2ogr would stop at the first such row.
ogr2ogr -f GPKG "$out/ogr.gpkg" "OAPIF:$api" parcels -nln ogr_parcels -oo PAGE_SIZE=1000 >"$out/ogr2ogr.log" 2>&1
ogr_exit=$?
set -e
t1=$(now)
ogr_time=$(secs "$t0" "$t1")
counts=$(ogrinfo -ro -q -sql "SELECT count(*) AS n, count(DISTINCT parcel_id) AS d FROM ogr_parcels" "$out/ogr.gpkg" 2>/dev/null |
  sed -nE 's/^ *[nd] \([A-Za-z0-9]+\) = ([0-9]+)/\1/p' | tr '\n' ' ' || true)
read -r ogr_rows ogr_distinct <<<"${counts:-0 0}" || true
ogr_requests=$(grep -c 'ogcapi/collections/parcels/items' "$out/access.log" || true)

# --- 5. geoflow's table against the source -------------------------------------------------------
# MapServer writes a null as "" (so an empty string and a null are one to any client):
# compared in the source's type, with "" as null on both sides.
cols=$(sql "SELECT string_agg(format('NULLIF(g.%1\$I::text, '''')::%2\$s IS DISTINCT FROM NULLIF(s.%1\$I::text, '''')::%2\$s', column_name, data_type), ' OR ')
            FROM information_schema.columns WHERE table_name = 'src_parcels' AND column_name NOT IN ('id', 'geom', 'parcel_id')")
differ=$(sql "SELECT count(*) FROM geoflow_parcels g JOIN src_parcels s USING (parcel_id) WHERE $cols")
missing=$(sql "SELECT count(*) FROM src_parcels s WHERE NOT EXISTS (SELECT 1 FROM geoflow_parcels g WHERE g.parcel_id = s.parcel_id)")
hausdorff=$(sql "SELECT coalesce(max(ST_HausdorffDistance(g.geom, s.geom)), 0) FROM geoflow_parcels g JOIN src_parcels s USING (parcel_id)")
read -r xmin ymin xmax ymax <<<"$extent"
lonfirst=$(sql "SELECT count(*) FROM geoflow_parcels WHERE ST_Within(ST_Centroid(geom), ST_Expand(ST_MakeEnvelope($xmin, $ymin, $xmax, $ymax, 4326), 0.001))")
# Which attributes differ, with an example each.
diffs=$(sql "SELECT string_agg(format('%s: %s rows (e.g. %s)', c, n, ex), '; ') FROM (
  SELECT c, count(*) AS n, min(format('%s stored %s, source %s', parcel_id, g, s)) AS ex FROM (
    SELECT parcel_id, c.key AS c, c.value AS g, to_jsonb(s) ->> c.key AS s
    FROM geoflow_parcels g JOIN src_parcels s USING (parcel_id), jsonb_each_text(to_jsonb(g)) c
    WHERE c.key IN (SELECT column_name FROM information_schema.columns WHERE table_name = 'src_parcels' AND column_name NOT IN ('id', 'geom', 'parcel_id'))
  ) x WHERE NULLIF(g, '') IS DISTINCT FROM NULLIF(s, '') GROUP BY c) y")
# The geometries geoflow stored against those ogr2ogr stored from the same server (for the
# parcels both have): equal means geoflow keeps every digit MapServer writes.
ogr2ogr -f PostgreSQL "PG:host=$pg_host port=$pg_port dbname=$pg_db user=$pg_user" "$out/ogr.gpkg" ogr_parcels \
  -nln ogr_check -select parcel_id -lco GEOMETRY_NAME=geom >>"$out/ogr2ogr.log" 2>&1 || true
vs_ogr=$(sql "SELECT format('%s parcels compared, largest Hausdorff distance %s', count(*), coalesce(max(ST_HausdorffDistance(g.geom, o.geom)), 0))
  FROM (SELECT DISTINCT ON (parcel_id) parcel_id, geom FROM ogr_check) o JOIN geoflow_parcels g USING (parcel_id)" 2>/dev/null || echo "not compared")
raw=$(curl -sS --max-time 120 "$api/collections/parcels/items?f=json&limit=1" | grep -oE '"coordinates":\[\[\[[-0-9.eE]+,[-0-9.eE]+' | head -1)

printf '\n| client | exit | requests for items | rows | distinct parcels | of the source | time |\n|---|---:|---:|---:|---:|---:|---:|\n'
printf '| geoflow (ogcapi_features) | %s | %s | %s | %s | %s | %ss |\n' "$gf_exit" "$gf_requests" "$gf_rows" "$gf_distinct" "$features" "$gf_time"
printf '| ogr2ogr OAPIF, PAGE_SIZE=1000 | %s | %s | %s | %s | %s | %ss |\n' "$ogr_exit" "$ogr_requests" "$ogr_rows" "$ogr_distinct" "$features" "$ogr_time"
printf '\ngeoflow against the source: %s parcels missing, %s rows with an attribute that differs, largest Hausdorff distance %s degrees, %s of %s rows with x = longitude\n' \
  "$missing" "$differ" "$hausdorff" "$lonfirst" "$gf_rows"
printf 'attributes that differ as text: %s\nMapServer writes coordinates as: %s\ngeoflow against ogr2ogr'"'"'s geometries from the same server: %s\n' "${diffs:-none}" "$raw" "$vs_ogr"
grep -E 'negotiated|server count|complete|INCOMPLETE' "$out/geoflow.log" | sed 's/^/  geoflow: /' | cut -c1-300
