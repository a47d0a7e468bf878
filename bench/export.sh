#!/usr/bin/env bash
# bench/export.sh: exporting a stored table to FlatGeobuf and to a GeoPackage, geoflow export
# against ogr2ogr from the same table, in the same run.
#
#   make bench-export
#   FEATURES=100000 ROUNDS=1 bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- bash bench/export.sh bin/geoflow
#
# The sample WFS's FEATURES parcels are harvested once into PostGIS and once into a GeoPackage
# store. Then, ROUNDS times, alternated: geoflow export and ogr2ogr (default creation options:
# FlatGeobuf with its spatial index, GeoPackage with its R-tree) write the same columns of the
# same table to each format, from each store. Every file is read back by ogrinfo (feature
# count) and the median wall time and peak RSS of each are printed, with geoflow's speed-up.
set -euo pipefail
bin=$(realpath "${1:-bin/geoflow}")
features=${FEATURES:-1000000}
rounds=${ROUNDS:-3}
db=${GEOFLOW_DATABASE_URL:?run under postgis.sh}
out=$(mktemp -d)
trap 'stop_wfs; rm -rf "$out"' EXIT
free_port() { for _ in $(seq 1 50); do p=$(( 20000 + RANDOM % 20000 )); (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; return 1; }
wfs_pid=""
stop_wfs() { [ -z "$wfs_pid" ] || { kill "$wfs_pid" 2>/dev/null || true; wait "$wfs_pid" 2>/dev/null || true; wfs_pid=""; }; }
port=$(free_port); url="http://127.0.0.1:$port/wfs"
"$bin" dev wfs --listen 127.0.0.1:$port --features "$features" >"$out/wfs.log" 2>&1 & wfs_pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
cat >"$out/load.yaml" <<YAML
name: export_bench
defaults:
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: $url
    typename: gf:parcels
    bbox: [11.44, 48.04, 11.56, 48.16]
    target: {table: export_bench}
YAML
gpkg=$out/store.gpkg
psql -X -qtA "$db" -c "DROP TABLE IF EXISTS export_bench" >/dev/null 2>&1 || true
echo "== loading $features parcels into PostGIS and into a GeoPackage store"
"$bin" run "$out/load.yaml" --progress off --database "$db" >"$out/load-pg.log" 2>&1 || { tail "$out/load-pg.log" >&2; exit 1; }
"$bin" run "$out/load.yaml" --progress off --database "$gpkg" >"$out/load-gpkg.log" 2>&1 || { tail "$out/load-gpkg.log" >&2; exit 1; }
stop_wfs
pg_rows=$(psql -X -qtA "$db" -c "SELECT count(*) FROM export_bench")
echo "  PostGIS: $pg_rows rows; GeoPackage: $(ogrinfo -ro -so "$gpkg" export_bench | sed -n 's/Feature Count: //p') rows"

# The columns geoflow export writes (the table's properties and gf_feature_id), for ogr2ogr -select.
cols=$(psql -X -qtA "$db" -c "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns
  WHERE table_name = 'export_bench' AND (column_name NOT LIKE 'gf\_%' OR column_name = 'gf_feature_id') AND column_name <> 'geom'")
pgconn=$(echo "$db" | sed -E 's#^postgres(ql)?://([^@/]*)@([^:/]*):([0-9]*)/([^?]*).*#host=\3 port=\4 user=\2 dbname=\5#')

# timed NAME FILE CMD...: wall seconds and peak RSS (MB) appended to $out/NAME.{secs,rss}; the
# file's feature count checked against the table's.
timed() {
  local name=$1 file=$2; shift 2
  rm -f "$file"
  /usr/bin/time -f '%e %M' -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1 || { echo "bench: $name failed:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
  read -r secs kb <"$out/$name.time"
  echo "$secs" >>"$out/$name.secs"; echo $(( kb / 1024 )) >>"$out/$name.rss"
  local n; n=$(ogrinfo -ro -so -al "$file" | sed -n 's/Feature Count: //p')
  [ "$n" = "$pg_rows" ] || { echo "bench: $name wrote $n features, the table has $pg_rows" >&2; exit 1; }
  rm -f "$file"
}
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  for fmt in fgb gpkg; do
    drv=FlatGeobuf; [ $fmt = gpkg ] && drv=GPKG
    timed "geoflow-pg-$fmt" "$out/a.$fmt" "$bin" export export_bench "$out/a.$fmt" --database "$db"
    timed "ogr2ogr-pg-$fmt" "$out/b.$fmt" ogr2ogr -f $drv "$out/b.$fmt" "PG:$pgconn" export_bench -select "$cols" -nln export_bench
    timed "geoflow-gpkg-$fmt" "$out/a.$fmt" "$bin" export export_bench "$out/a.$fmt" --database "$gpkg"
    timed "ogr2ogr-gpkg-$fmt" "$out/b.$fmt" ogr2ogr -f $drv "$out/b.$fmt" "$gpkg" export_bench -select "$cols" -nln export_bench
  done
done

echo "== $pg_rows features, median of $rounds rounds (wall s, peak RSS MB)"
printf '%-10s %-10s %12s %12s %12s %12s %9s\n' from to geoflow_s geoflow_MB ogr2ogr_s ogr2ogr_MB speedup
for src in pg gpkg; do
  for fmt in fgb gpkg; do
    g=$(median "$out/geoflow-$src-$fmt.secs"); o=$(median "$out/ogr2ogr-$src-$fmt.secs")
    gm=$(median "$out/geoflow-$src-$fmt.rss"); om=$(median "$out/ogr2ogr-$src-$fmt.rss")
    name=PostGIS; [ $src = gpkg ] && name=GeoPackage
    to=FlatGeobuf; [ $fmt = gpkg ] && to=GeoPackage
    awk -v n=$name -v t=$to -v g="$g" -v o="$o" -v gm="$gm" -v om="$om" 'BEGIN { printf "%-10s %-10s %12.2f %12d %12.2f %12d %8.2fx\n", n, t, g, gm, o, om, o / g }'
  done
done
