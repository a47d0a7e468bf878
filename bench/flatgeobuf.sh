#!/usr/bin/env bash
# bench/flatgeobuf.sh: the FlatGeobuf writer (export/flatgeobuf) against GDAL's.
#
#   bash bench/flatgeobuf.sh
#   ROUNDS=5 bash bench/flatgeobuf.sh
#
# BenchmarkWrite writes 100,000 parcels (polygons of 5 points, 4 properties) with the
# index: ns/feature and allocs/feature. GDAL then reads that file back as GeoJSON, and
# ogr2ogr -f FlatGeobuf writes the same features from that GeoJSON (index included, as
# by default), ROUNDS times (default 3); the report gives the median wall times and
# their ratio. GDAL's time includes parsing the GeoJSON, which the benchmark's does not
# (its features are made in memory beforehand): the second GDAL figure, FlatGeobuf to
# FlatGeobuf, takes the parsing mostly away.
set -euo pipefail
rounds=${ROUNDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$(dirname "$0")/.."

GEOFLOW_BENCH_FGB=$out/geoflow.fgb go test ./export/flatgeobuf -run '^$' -bench '^BenchmarkWrite$' -benchtime "${rounds}x" -count 1 | tee "$out/bench.txt"
ns=$(awk '/^BenchmarkWrite/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/feature") print $i }' "$out/bench.txt")
allocs=$(awk '/^BenchmarkWrite/ { for (i = 1; i < NF; i++) if ($(i+1) == "allocs/op") print $i / 100000 }' "$out/bench.txt")

ogr2ogr -f GeoJSON "$out/parcels.geojson" "$out/geoflow.fgb"
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
timed() { # command...: wall seconds
  local s e; s=$(date +%s.%N); "$@"; e=$(date +%s.%N); echo "$e - $s" | bc; }
gdal_json=$(for _ in $(seq 1 "$rounds"); do rm -f "$out/gdal.fgb"; timed ogr2ogr -f FlatGeobuf "$out/gdal.fgb" "$out/parcels.geojson"; done | median)
gdal_fgb=$(for _ in $(seq 1 "$rounds"); do rm -f "$out/gdal2.fgb"; timed ogr2ogr -f FlatGeobuf "$out/gdal2.fgb" "$out/geoflow.fgb"; done | median)
ours=$(echo "$ns * 100000 / 1000000000" | bc -l)
echo
printf 'geoflow Write:                  %8.0f ns/feature, %.2f allocs/feature, %.3f s for 100,000\n' "$ns" "$allocs" "$ours"
printf 'ogr2ogr GeoJSON -> FlatGeobuf:  %8.0f ns/feature, %.3f s (ratio GDAL/geoflow %.2f)\n' "$(echo "$gdal_json * 10000" | bc -l)" "$gdal_json" "$(echo "$gdal_json / $ours" | bc -l)"
printf 'ogr2ogr FlatGeobuf -> same:     %8.0f ns/feature, %.3f s (ratio GDAL/geoflow %.2f)\n' "$(echo "$gdal_fgb * 10000" | bc -l)" "$gdal_fgb" "$(echo "$gdal_fgb / $ours" | bc -l)"
printf 'file sizes: geoflow %d bytes, GDAL %d bytes\n' "$(stat -c %s "$out/geoflow.fgb")" "$(stat -c %s "$out/gdal.fgb")"
