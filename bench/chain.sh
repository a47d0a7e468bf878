#!/usr/bin/env bash
# bench/chain.sh: the README's chain (harvest -> SQL summary -> export of the run's changes)
# on PostGIS and on a GeoPackage, judged by GDAL, then a --bbox rerun after the server changed;
# and target.srs against ogr2ogr -t_srs of the same features.
#
#   make bench-chain
#   FEATURES=5000 bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/chain.sh bin/geoflow
#
# For each store: flows/parcels.yaml runs against the sample WFS; geoflow export writes the
# table to .gpkg, .fgb and .geojsons; ogrinfo reads each file and the store's own table
# (count, extent, fields, one feature), ogrinfo -spat on the FlatGeobuf (its R-tree) is
# compared id by id with ogrinfo -spat on the store, and GDAL's validator judges the
# GeoPackage. The server then edits, deletes and adds parcels; a --bbox rerun recomputes the
# SQL step's cells in that box only and rewrites the changes file: feature counts before and
# after. Last, the same parcels stored with target.srs EPSG:25832 on both stores are
# compared vertex by vertex with ogr2ogr -t_srs EPSG:25832 reading the same server (GDAL's
# WFS driver).
set -euo pipefail
bin=$(realpath "${1:-bin/geoflow}")
features=${FEATURES:-20000}
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
repo=$(pwd)
out=$(mktemp -d)
trap 'stop_wfs; rm -rf "$out"' EXIT
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wfs_pid=""
stop_wfs() { [ -z "$wfs_pid" ] || { kill "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true; wfs_pid=""; }; }
start_wfs() {
  stop_wfs
  port=$(free_port); base="http://127.0.0.1:$port"
  "$bin" dev wfs --listen 127.0.0.1:$port --features "$features" --edited 400 --deleted 100 --added 200 >"$out/wfs.log" 2>&1 & wfs_pid=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.1; done
  cat "$out/wfs.log" >&2; exit 1
}
pgconn=$(echo "$db" | sed -E 's#^postgres(ql)?://([^@/]*)@([^:/]*):([0-9]*)/([^?]*).*#host=\3 port=\4 user=\2 dbname=\5#')
sql() { psql -X -qtA "$db" -c "$1"; }
count() { ogrinfo -ro -so "$@" 2>/dev/null | sed -n 's/^Feature Count: //p'; }
extent() { ogrinfo -ro -so "$@" 2>/dev/null | sed -n 's/^Extent: //p'; }
fields() { ogrinfo -ro -so "$@" 2>/dev/null | sed -n 's/^\([a-z_0-9]*\): \([A-Za-z0-9()]*\).*/\1 \2/p' | grep -v '^gf_\(payload_hash\|run_id\|fetched_at\|key\)' | sort | tr '\n' ' '; }
ids() { ogrinfo -ro -q "$@" 2>/dev/null | sed -n 's/^ *gf_feature_id (String) = //p' | sort; }
box=(11.47 48.07 11.50 48.10)

for st in postgis gpkg; do
  start_wfs
  dir=$out/$st; mkdir -p "$dir"; cp "$repo/flows/parcels.yaml" "$dir/"
  if [ $st = postgis ]; then
    store=$db; src="PG:$pgconn"
    sql "DROP TABLE IF EXISTS parcels, zoning_summary, geoflow_exports CASCADE" >/dev/null 2>&1 || true
  else
    store=$dir/store.gpkg; src=$store
  fi
  echo "== $st: geoflow run parcels.yaml (harvest -> by_zoning -> changes)"
  WFS_URL=$base/wfs "$bin" run "$dir/parcels.yaml" --database "$store" --progress off 2>"$dir/run1.log" | grep -E '^(run|  features|  SQL)'
  echo "  out/parcels-changes.fgb: $(count "$dir/out/parcels-changes.fgb" -al) features"
  for ext in gpkg fgb geojsons; do
    "$bin" export parcels "$dir/parcels.$ext" --database "$store" | sed 's/^/  geoflow export: /'
  done
  echo "== $st: GDAL reads the store's table and each file"
  printf '  %-16s %8s  %s\n' source features extent
  printf '  %-16s %8s  %s\n' "the store" "$(count "$src" parcels)" "$(extent "$src" parcels)"
  for ext in gpkg fgb geojsons; do
    printf '  %-16s %8s  %s\n' "parcels.$ext" "$(count "$dir/parcels.$ext" -al)" "$(extent "$dir/parcels.$ext" -al)"
  done
  echo "  fields of the store's table: $(fields "$src" parcels)"
  for ext in gpkg fgb geojsons; do echo "  fields of parcels.$ext: $(fields "$dir/parcels.$ext" -al)"; done
  one="gf_feature_id = 'parcels.42'"
  ogrinfo -ro -q "$src" parcels -where "$one" | sed -n 's/^  \([a-z_0-9]*\) ([A-Za-z0-9()]*) = /\1=/p' | grep -v '^gf_\(payload_hash\|run_id\|fetched_at\|key\)=' | sort >"$dir/one.store"
  # FlatGeobuf has no date type: a date is read back as that day's midnight.
  ogrinfo -ro -q "$dir/parcels.fgb" -al -where "$one" | sed -n 's/^  \([a-z_0-9]*\) ([A-Za-z0-9()]*) = /\1=/p' | sed 's/^surveyed=\(.*\) 00:00:00$/surveyed=\1/' | sort >"$dir/one.fgb"
  if diff -q "$dir/one.store" "$dir/one.fgb" >/dev/null; then
    echo "  parcels.42 in the store and in parcels.fgb: the same $(wc -l <"$dir/one.fgb") values"
  else
    echo "  parcels.42 differs:"; { diff "$dir/one.store" "$dir/one.fgb" || true; } | sed 's/^/    /'
  fi
  ids "$src" parcels -spat "${box[@]}" >"$dir/spat.store"
  ids "$dir/parcels.fgb" -al -spat "${box[@]}" >"$dir/spat.fgb"
  echo "  ogrinfo -spat ${box[*]}: the store $(wc -l <"$dir/spat.store"), parcels.fgb $(wc -l <"$dir/spat.fgb") features; ids differing: $(comm -3 "$dir/spat.store" "$dir/spat.fgb" | wc -l)"
  if python3 /usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py --extra --warning-as-error "$dir/parcels.gpkg" >"$dir/validate.log" 2>&1; then
    echo "  validate_gpkg.py --extra --warning-as-error parcels.gpkg: accepted (exit 0)"
  else
    echo "  validate_gpkg.py refused parcels.gpkg:"; sed 's/^/    /' "$dir/validate.log"
  fi

  echo "== $st: the server edits 400, deletes 100, adds 200 parcels; geoflow run --bbox ${box[*]}"
  curl -s -X POST "$base/_dev/revision?rev=1" >/dev/null
  before=$(count "$dir/out/parcels-changes.fgb" -al)
  WFS_URL=$base/wfs "$bin" run "$dir/parcels.yaml" --database "$store" --progress off --bbox "$(IFS=,; echo "${box[*]}")" 2>"$dir/run2.log" | grep -E '^(run|  features|  SQL)'
  after=$(count "$dir/out/parcels-changes.fgb" -al)
  echo "  out/parcels-changes.fgb: $before features before, $after after; by gf_change:"
  ogrinfo -ro -q "$dir/out/parcels-changes.fgb" -dialect SQLite -sql "SELECT gf_change || ': ' || count(*) AS n FROM parcels GROUP BY gf_change" |
    sed -n 's/^  n (String) = /    /p'
  changes_ext=$(ogrinfo -ro -so -al "$dir/out/parcels-changes.fgb" | sed -n 's/^Extent: //p')
  echo "  the changes' extent: $changes_ext (the box: ${box[*]})"
  echo "  zoning_summary rows by the run that last computed them (run_id: rows, parcels):"
  if [ $st = postgis ]; then
    sql "SELECT run_id || ': ' || count(*) || ' rows, ' || sum(parcels) || ' parcels' FROM zoning_summary GROUP BY run_id ORDER BY run_id" | sed 's/^/    /'
  else
    python3 -c 'import sqlite3, sys
for r in sqlite3.connect(sys.argv[1]).execute("SELECT run_id, count(*), sum(parcels) FROM zoning_summary GROUP BY run_id ORDER BY run_id"):
    print("    %d: %d rows, %d parcels" % r)' "$store"
  fi
done

echo "== target.srs EPSG:25832 against ogr2ogr -t_srs EPSG:25832 (the same server, the same parcels)"
start_wfs
cat >"$out/utm.yaml" <<YAML
name: utm
tasks:
  parcels:
    type: wfs
    url: $base/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    output_format: application/json
    target: {table: parcels_utm, srs: EPSG:25832}
YAML
sql "DROP TABLE IF EXISTS parcels_utm, parcels_ogr, parcels_utm_gpkg CASCADE" >/dev/null 2>&1 || true
"$bin" run "$out/utm.yaml" --database "$db" --progress off >/dev/null 2>&1
"$bin" run "$out/utm.yaml" --database "$out/utm.gpkg" --progress off >/dev/null 2>&1
ogr2ogr -f PostgreSQL "PG:$pgconn" "WFS:$base/wfs" gf:parcels -t_srs EPSG:25832 -nln parcels_ogr -lco GEOMETRY_NAME=geom -lco FID=ogc_fid
ogr2ogr -f PostgreSQL "PG:$pgconn" "$out/utm.gpkg" parcels_utm -nln parcels_utm_gpkg -lco GEOMETRY_NAME=geom -lco FID=gpkg_fid
for t in parcels_utm parcels_utm_gpkg; do
  name=PostGIS; [ $t = parcels_utm_gpkg ] && name=GeoPackage
  sql "SELECT '  $name: ' || count(*) || ' vertices of ' || count(DISTINCT a.gf_feature_id) || ' parcels compared; max difference '
         || to_char(max(ST_Distance(pa.geom, pb.geom)), 'FM0.000000000') || ' m; SRID ' || max(ST_SRID(a.geom))
         FROM $t a JOIN parcels_ogr b ON b.gml_id = a.gf_feature_id
         CROSS JOIN LATERAL ST_DumpPoints(a.geom) pa
         JOIN LATERAL ST_DumpPoints(b.geom) pb ON pb.path = pa.path" 2>&1
done
