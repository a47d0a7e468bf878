#!/usr/bin/env bash
# Refreshes the vendored MapLibre GL JS from the npm registry: the ES modules (the map and
# its worker, which load side by side from one static route with no bundler), its
# stylesheet and its licence. geoflow serves them itself (go:embed): the UI works offline,
# with no CDN.
#
#   bash server/web/vendor.sh            # the version in static/vendor/maplibre-gl/VERSION
#   bash server/web/vendor.sh 6.18.0     # another version
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dst=$here/static/vendor/maplibre-gl
version=${1:-$(cat "$dst/VERSION")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "maplibre-gl@$version" >/dev/null && tar xzf maplibre-gl-*.tgz)
pkg=$tmp/package
license=$(node -p "require('$pkg/package.json').license")
[ "$license" = "BSD-3-Clause" ] || { echo "maplibre-gl@$version is licensed $license, not BSD-3-Clause: check before vendoring" >&2; exit 1; }
rm -rf "$dst" && mkdir -p "$dst"
for f in maplibre-gl.mjs maplibre-gl-worker.mjs; do
	# The source maps are not vendored; their reference would only 404.
	sed '/^\/\/# sourceMappingURL=/d' "$pkg/dist/$f" > "$dst/$f"
done
cp "$pkg/dist/maplibre-gl.css" "$pkg/LICENSE.txt" "$dst/"
echo "$version" > "$dst/VERSION"
(cd "$dst" && sha256sum maplibre-gl.mjs maplibre-gl-worker.mjs maplibre-gl.css > SHA256SUMS)
echo "vendored maplibre-gl $version into $dst ($(du -sh "$dst" | cut -f1))"
