#!/usr/bin/env bash
# bench/gpkg.sh: the embedded GeoPackage store, end to end, against PostGIS in the same run.
#
#   make bench-gpkg
#   FEATURES=20000 RSS_FEATURES=0 bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/gpkg.sh bin/geoflow
#
# In an empty directory with no GEOFLOW_DATABASE_URL: geoflow run harvests FEATURES parcels
# from the sample WFS into ./geoflow.gpkg; ogrinfo and GDAL's validator judge the file;
# ogr2ogr copies the layer into PostGIS, where every feature is compared with the same
# harvest made by geoflow straight into PostGIS; a rerun inserts 0; runs list, dlq list, a
# --bbox rerun after deleting an area and --resume after SIGKILL work on the file. Then the
# time of the same harvest into each store (alternated, ROUNDS times, median ratio), and peak RSS at
# RSS_FEATURES into the GeoPackage.
set -euo pipefail
bin=$(realpath "${1:-bin/geoflow}")
features=${FEATURES:-100000}
rss_features=${RSS_FEATURES:-1000000}
rounds=${ROUNDS:-5}
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
out=$(mktemp -d)
work=$out/empty
mkdir -p "$work"
sql() { psql -X -qtA "$db" -c "$1"; }
lite() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2], sys.argv[3:]).fetchall(); c.commit(); print("\n".join("|".join(str(v) for v in row) for row in r))' "$@"; }
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wfs_pid=""
start_wfs() { # features
  local port; port=$(free_port); url="http://127.0.0.1:$port/wfs"
  "$bin" dev wfs --listen 127.0.0.1:$port --features "$1" --count-default 1000 >"$out/wfs.log" 2>&1 & wfs_pid=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.1; done
  cat "$out/wfs.log" >&2; exit 1; }
stop_wfs() { kill "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true; }
trap stop_wfs EXIT
flow() { # name table -> flow file
  cat >"$out/$1.yaml" <<YAML
name: $1
defaults:
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: $url
    typename: gf:parcels
    bbox: [11.44, 48.04, 11.56, 48.16]
    target: {table: $2}
YAML
  echo "$out/$1.yaml"; }
# timed NAME CMD...: wall seconds and peak RSS (MB) into $out/NAME.{secs,rss}
timed() {
  local name=$1; shift
  /usr/bin/time -f '%e %M' -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1 || { echo "bench: $name failed:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
  read -r secs kb <"$out/$name.time"; echo "$secs" >"$out/$name.secs"; echo $(( kb / 1024 )) >"$out/$name.rss"; }

start_wfs "$features"
cd "$work"
echo "== in an empty directory ($work), no GEOFLOW_DATABASE_URL: geoflow run"
timed gpkg-first env -u GEOFLOW_DATABASE_URL "$bin" run "$(flow parcels parcels)" --progress off
head -1 "$out/gpkg-first.log"; grep -E '^run |features:' "$out/gpkg-first.log"
echo "== ogrinfo -so geoflow.gpkg parcels"
ogrinfo -so geoflow.gpkg parcels | grep -E 'Feature Count|Extent|^Layer SRS|ID\["EPSG",[0-9]+\]\]$' | tail -4
echo "== GDAL's validator (validate_gpkg.py --extra --warning-as-error)"
python3 /usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py --extra --warning-as-error geoflow.gpkg && echo "  accepted (exit 0)"
echo "== R-tree: a spatial filter through ogrinfo against the same count by SQL"
spat=$(ogrinfo -so -spat 11.47 48.07 11.50 48.10 geoflow.gpkg parcels | sed -n 's/Feature Count: //p')
bysql=$(lite geoflow.gpkg "SELECT count(*) FROM parcels WHERE ST_MaxX(geom) >= 11.47 AND ST_MinX(geom) <= 11.50 AND ST_MaxY(geom) >= 48.07 AND ST_MinY(geom) <= 48.10" 2>/dev/null ||
  lite geoflow.gpkg "SELECT count(*) FROM rtree_parcels_geom WHERE maxx >= 11.47 AND minx <= 11.50 AND maxy >= 48.07 AND miny <= 48.10")
echo "  ogrinfo -spat: $spat features; R-tree by SQL: $bysql"

echo "== ogr2ogr into PostGIS, compared feature by feature with geoflow's own harvest into PostGIS"
sql "DROP TABLE IF EXISTS from_gpkg, direct_pg" >/dev/null 2>&1 || true
GEOFLOW_DATABASE_URL=$db "$bin" run "$(flow direct direct_pg)" --progress off >"$out/direct.log" 2>&1
pgconn=$(echo "$db" | sed -E 's#^postgres(ql)?://([^@/]*)@([^:/]*):([0-9]*)/([^?]*).*#host=\3 port=\4 user=\2 dbname=\5#')
ogr2ogr -f PostgreSQL "PG:$pgconn" geoflow.gpkg parcels -nln from_gpkg -lco GEOMETRY_NAME=geom -lco FID=gpkg_fid
props=$(sql "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) FROM information_schema.columns
  WHERE table_name = 'direct_pg' AND column_name NOT IN ('fid', 'geom', 'gf_run_id', 'gf_fetched_at')")
sql "SELECT count(*) AS from_gpkg FROM from_gpkg" | sed 's/^/  rows copied: /'
diff=$(sql "SELECT count(*) FROM (SELECT $props, ST_AsBinary(geom) FROM direct_pg EXCEPT SELECT $props, ST_AsBinary(geom) FROM from_gpkg) d")
diff2=$(sql "SELECT count(*) FROM (SELECT $props, ST_AsBinary(geom) FROM from_gpkg EXCEPT SELECT $props, ST_AsBinary(geom) FROM direct_pg) d")
echo "  features in PostGIS but not equal in the copy: $diff; in the copy but not in PostGIS: $diff2 (columns: $props, geometry as WKB)"

echo "== rerun"
env -u GEOFLOW_DATABASE_URL "$bin" run "$out/parcels.yaml" --progress off 2>&1 | grep -E 'features:'
echo "== geoflow runs list / dlq list on the file"
env -u GEOFLOW_DATABASE_URL "$bin" runs list 2>/dev/null
env -u GEOFLOW_DATABASE_URL "$bin" dlq list 2>/dev/null

echo "== --bbox rerun after deleting an area's rows"
# the rows whose box lies inside the area: a WFS BBOX filter surely selects them again
inside="fid IN (SELECT id FROM rtree_parcels_geom WHERE minx >= 11.47 AND maxx <= 11.50 AND miny >= 48.07 AND maxy <= 48.10)"
before=$(lite geoflow.gpkg "SELECT count(*) FROM parcels WHERE $inside")
lite geoflow.gpkg "DELETE FROM parcels WHERE $inside" >/dev/null
deleted=$(( before - $(lite geoflow.gpkg "SELECT count(*) FROM parcels WHERE gf_feature_id IS NOT NULL AND $inside") ))
env -u GEOFLOW_DATABASE_URL "$bin" run "$out/parcels.yaml" --bbox 11.47,48.07,11.50,48.10 --progress off 2>&1 | grep -E 'features:'
after=$(lite geoflow.gpkg "SELECT count(*) FROM parcels WHERE $inside")
echo "  $deleted of $before rows of the area deleted; $after there after the rerun; distinct in the table: $(lite geoflow.gpkg "SELECT count(DISTINCT gf_feature_id) FROM parcels")"

echo "== SIGKILL at 30%, then --resume"
env -u GEOFLOW_DATABASE_URL "$bin" run "$(flow killed killed)" --progress off >"$out/killed.log" 2>&1 & run_pid=$!
target=$(( features * 30 / 100 ))
until [ "$(lite geoflow.gpkg "SELECT count(*) FROM killed" 2>/dev/null || echo 0)" -ge "$target" ] 2>/dev/null; do
  kill -0 $run_pid 2>/dev/null || { echo "the run ended before 30%" >&2; exit 1; }; sleep 0.05; done
kill -9 $run_pid; wait $run_pid 2>/dev/null || true
echo "  killed with $(lite geoflow.gpkg "SELECT count(*) FROM killed") rows in"
env -u GEOFLOW_DATABASE_URL "$bin" run "$out/killed.yaml" --resume --progress off 2>&1 | grep -E '^run |features:'
echo "  after --resume: $(lite geoflow.gpkg "SELECT count(*) FROM killed") rows, $(lite geoflow.gpkg "SELECT count(DISTINCT gf_feature_id) FROM killed") distinct of $features"

echo "== the same harvest into each store, alternated ($rounds rounds)"
ratios=()
for round in $(seq 1 "$rounds"); do
  rm -f "$out/t.gpkg"*; sql "DROP TABLE IF EXISTS t_pg" >/dev/null 2>&1 || true
  timed "pg-$round" env GEOFLOW_DATABASE_URL="$db" "$bin" run "$(flow t_pg t_pg)" --progress off
  timed "gp-$round" env GEOFLOW_DATABASE_URL="$out/t.gpkg" "$bin" run "$(flow t_gp t_gp)" --progress off
  pg=$(cat "$out/pg-$round.secs"); gp=$(cat "$out/gp-$round.secs")
  ratio=$(awk -v a="$gp" -v b="$pg" 'BEGIN{printf "%.2f", a/b}')
  ratios+=("$ratio")
  printf '  round %d: PostGIS %s s (%s MB), GeoPackage %s s (%s MB): GeoPackage/PostGIS %sx\n' "$round" "$pg" "$(cat "$out/pg-$round.rss")" \
    "$gp" "$(cat "$out/gp-$round.rss")" "$ratio"
done
echo "  median GeoPackage/PostGIS: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}')x"
stop_wfs

if [ "$rss_features" -gt 0 ]; then
  echo "== $rss_features features into a GeoPackage: peak RSS"
  start_wfs "$rss_features"
  rm -f "$out/big.gpkg"*
  timed big env GEOFLOW_DATABASE_URL="$out/big.gpkg" "$bin" run "$(flow big big)" --progress off
  stop_wfs
  echo "  $(cat "$out/big.rss") MB peak RSS, $(cat "$out/big.secs") s, $(lite "$out/big.gpkg" "SELECT count(DISTINCT gf_feature_id) FROM big") distinct features, file $(du -m "$out/big.gpkg" | cut -f1) MB"
fi
[ -n "${KEEP:-}" ] && echo "kept $out" || rm -rf "$out"
