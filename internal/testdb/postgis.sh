#!/usr/bin/env bash
# postgis.sh: get a PostGIS for tests and the demo, on any machine of ours.
#
#   postgis.sh run [--env VAR] -- CMD...   run CMD with VAR (default GEOFLOW_TEST_DATABASE_URL)
#                                         set to a PostGIS URL; stop what was started afterwards
#   postgis.sh start                       start a throwaway cluster; print "URL DIR"
#   postgis.sh stop DIR                    stop and remove a cluster started by start
#   postgis.sh gdal                        install gdal-bin, cgi-mapserver and chromium when missing (root); print
#                                         GEOFLOW_REQUIRE_GDAL=1 GEOFLOW_REQUIRE_MAPSERVER=1
#
# Order of preference: VAR already set -> use it; a Docker engine answers -> docker compose
# with docker-compose.yml; else a throwaway cluster from Debian's postgresql-15-postgis-3
# (installed when missing), initdb'd as the postgres user when we are root (initdb refuses
# root), on a private port and data directory. Failure to get a database is an error: the
# tests must fail, never skip, without one.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
log() { printf 'postgis.sh: %s\n' "$*" >&2; }

as_owner() { # run a command as the cluster's owner
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null; then runuser -u postgres -- "$@"; else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  else
    "$@"
  fi
}

pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    local v; v=$(basename "$(dirname "$d")")
    if [ -x "$d/initdb" ] && ls /usr/share/postgresql/"$v"/extension/postgis.control >/dev/null 2>&1; then
      echo "$d"; return 0
    fi
  done
  return 1
}

install_postgis() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      log "PostgreSQL with PostGIS is not installed and I am not root: install postgresql-15-postgis-3, or set GEOFLOW_TEST_DATABASE_URL"
      return 1
    fi
  fi
  log "installing postgresql-15-postgis-3 from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-15-postgis-3 >/tmp/geoflow-apt.log 2>&1; then
    $sudo apt-get update -qq >>/tmp/geoflow-apt.log 2>&1 || true
    $sudo apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-15-postgis-3 >>/tmp/geoflow-apt.log 2>&1 || {
      log "apt-get install failed; the last lines of /tmp/geoflow-apt.log:"; tail -n 15 /tmp/geoflow-apt.log >&2; return 1; }
  fi
}

# free_port picks a port nothing listens on, below Linux's ephemeral range (32768-60999):
# a port in that range may be the local end of any outgoing connection, which a connect
# test cannot see but which makes the server's bind fail.
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 12000 ))
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "$p"; return 0; fi
  done
  log "no free port found"; return 1
}

start_cluster() {
  local bin dir port
  bin=$(pg_bindir) || { install_postgis && bin=$(pg_bindir); } || { log "no PostgreSQL with PostGIS after installing"; return 1; }
  dir=$(mktemp -d /tmp/geoflow-pg.XXXXXX)
  chmod 755 "$dir"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
    log "initdb failed:"; cat "$dir/initdb.log" >&2; rm -rf "$dir"; return 1; }
  # The port is only known free when it is bound: another process (a parallel test run,
  # an outgoing connection) may take it between free_port and the server's start, so a
  # start that fails on the address is tried again on another port.
  local try
  for try in 1 2 3 4 5; do
    port=$(free_port) || { rm -rf "$dir"; return 1; }
    # Durability settings off: this cluster is thrown away, and tests should not wait on fsync.
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.$try.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB" \
      start >/dev/null; then
      break
    fi
    if [ "$try" -lt 5 ] && grep -q "Address already in use" "$dir/server.$try.log"; then
      log "port $port was taken before the server could bind it; trying another"
      continue
    fi
    log "the server did not start:"; tail -n 20 "$dir/server.$try.log" >&2; rm -rf "$dir"; return 1
  done
  "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "CREATE DATABASE geoflow" >/dev/null
  echo "postgres://postgres@127.0.0.1:$port/geoflow?sslmode=disable $dir"
}

stop_cluster() {
  local dir=$1 bin
  [ -d "$dir/data" ] || return 0
  bin=$(pg_bindir) || return 0
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

# ensure_gdal installs Debian's gdal-bin, cgi-mapserver and chromium when they are missing and
# we may, so that the tests that check geoflow against ogr2ogr and a real MapServer, and the web
# UI's tests in a real browser, run instead of failing; it prints the variables to export for
# what is there.
ensure_gdal() {
  local sudo="" pkgs=""
  command -v ogrinfo >/dev/null || pkgs="$pkgs gdal-bin"
  [ -x /usr/lib/cgi-bin/mapserv ] || pkgs="$pkgs cgi-mapserver"
  command -v chromium >/dev/null || [ -n "${GEOFLOW_CHROMIUM:-}" ] || pkgs="$pkgs chromium fonts-dejavu-core"
  if [ -n "$pkgs" ]; then
    [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null && sudo -n true 2>/dev/null && sudo="sudo -n"; } || {
      log "$pkgs not installed and I am not root: the GDAL, MapServer and browser tests will fail; install them"; return 0; }
    log "installing$pkgs from Debian's packages (ogr2ogr and MapServer interoperability tests, the web UI's browser tests)"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs >>/tmp/geoflow-apt.log 2>&1 ||
      { $sudo apt-get update -qq >>/tmp/geoflow-apt.log 2>&1 || true
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs >>/tmp/geoflow-apt.log 2>&1; } ||
      { log "installing$pkgs failed (see /tmp/geoflow-apt.log)"; return 1; }
  fi
  echo "GEOFLOW_REQUIRE_GDAL=1 GEOFLOW_REQUIRE_MAPSERVER=1"
}

docker_ok() { command -v docker >/dev/null && timeout 5 docker info >/dev/null 2>&1; }

cmd=${1:-}; shift || true
case "$cmd" in
  start) start_cluster ;;
  gdal) ensure_gdal ;;
  stop) stop_cluster "$1" ;;
  run)
    var=GEOFLOW_TEST_DATABASE_URL
    if [ "${1:-}" = --env ]; then var=$2; shift 2; fi
    [ "${1:-}" = -- ] && shift
    if [ -n "${!var:-}" ]; then
      log "using \$$var"
      exec "$@"
    fi
    if docker_ok; then
      log "starting PostGIS with docker compose"
      (cd "$root" && docker compose up -d --wait postgis) >&2
      trap '(cd "$root" && docker compose down -v) >/dev/null 2>&1 || true' EXIT
      export "$var=postgres://geoflow:geoflow@127.0.0.1:${GEOFLOW_PG_PORT:-55432}/geoflow?sslmode=disable"
    else
      log "no Docker engine: starting a throwaway PostgreSQL + PostGIS cluster"
      read -r url dir < <(start_cluster) || exit 1
      [ -n "${url:-}" ] || exit 1
      trap 'stop_cluster "$dir"' EXIT
      export "$var=$url"
      log "PostGIS at $url (data in $dir)"
    fi
    "$@"
    ;;
  *) echo "usage: postgis.sh run [--env VAR] -- CMD... | start | stop DIR" >&2; exit 2 ;;
esac
