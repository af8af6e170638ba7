#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the tests and benchmarks.
#   scripts/pg.sh start   # prints the URL (postgres://...); starts the cluster when needed
#   scripts/pg.sh stop
# The cluster lives in $GATEMESH_PG_DIR (default /var/tmp/gatemesh-pg), listens on
# 127.0.0.1:$GATEMESH_PG_PORT (default 55432) and trusts local connections: it holds test
# data only. As root it runs as the `postgres` user (initdb refuses root).
set -euo pipefail
dir=${GATEMESH_PG_DIR:-/var/tmp/gatemesh-pg}
port=${GATEMESH_PG_PORT:-55432}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [[ -z $bin ]]; then
  echo "PostgreSQL is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
url="postgres://postgres@127.0.0.1:$port/postgres"

case ${1:-start} in
start)
  if as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
    echo "$url"
    exit 0
  fi
  if [[ ! -f $dir/PG_VERSION ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    [[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
    as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  # Many test processes each hold a small pool; the sockets stay in the data directory.
  as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir -c max_connections=300" \
    start >/dev/null
  echo "$url"
  ;;
stop)
  as_owner "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1 || true
  ;;
*)
  echo "usage: scripts/pg.sh start|stop" >&2
  exit 2
  ;;
esac
