#!/usr/bin/env bash
# CPU time the server and PostgreSQL spend per redemption request, read from /proc (user +
# system ticks of the server process, the postmaster and its backends), so it does not
# depend on what else the machine runs — unlike a rate. The bench client is not counted.
#   scripts/cpu-per-request.sh [BINARY] [MODE]   (MODE: hot (default) or distinct;
#                                                  env: CLIENTS=16 DURATION=10 TICKETS=5000)
# Runs `gatemesh server --db …` over HTTPS on a fresh database of the throwaway cluster
# (scripts/pg.sh), drives it with `gatemesh bench server`, prints one line of figures.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
gm=${1:-$CARGO_TARGET_DIR/release/gatemesh}
mode=${2:-hot}
[[ -x $gm ]] || cargo build --quiet --release -p gatemesh-cli --locked
url=$(scripts/pg.sh start)
db=gm_cpu_$$
psql "$url" -q -c "CREATE DATABASE $db" >/dev/null
work=$(mktemp -d)
spid=
cleanup() {
  [[ -n $spid ]] && { kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; }
  psql "$url" -q -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
export GATEMESH_ADMIN_TOKEN="cpu-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
"$gm" server --data "$work/d" --listen 127.0.0.1:0 --db "${url%/*}/$db" >"$work/out" 2>"$work/err" &
spid=$!
for _ in $(seq 300); do
  u=$(jq -r '.url // empty' "$work/out" 2>/dev/null | head -n 1)
  [[ -n $u ]] && break
  sleep 0.1
done
[[ -n $u ]] || { cat "$work/err" >&2; exit 1; }
fp=$(jq -r '.fingerprint // empty' "$work/out" | head -n 1)
pgdir=${GATEMESH_PG_DIR:-/var/tmp/gatemesh-pg}
ticks() { # user + system ticks of the given processes
  local t=0 p f
  for p in "$@"; do
    [[ -r /proc/$p/stat ]] || continue
    read -r -a f <<<"$(sed 's/.*) //' "/proc/$p/stat")"
    t=$((t + f[11] + f[12]))
  done
  echo "$t"
}
pm=$(head -n 1 "$pgdir/postmaster.pid")
all() { ticks "$spid" "$pm" $(pgrep -P "$pm"); }
s0=$(ticks "$spid") a0=$(all)
"$gm" bench server --url "$u" --fingerprint "$fp" --clients "${CLIENTS:-16}" \
  --tickets "${TICKETS:-5000}" --duration-secs "${DURATION:-10}" --mode "$mode" --hot-group 40 \
  --report "$work/r.json" >/dev/null 2>&1
a1=$(all) s1=$(ticks "$spid")
n=$(jq .requests "$work/r.json")
hz=$(getconf CLK_TCK)
echo "$mode: $n requests, $(jq .requests_per_s "$work/r.json")/s;" \
  "server + PostgreSQL $(((a1 - a0) * 1000000 / hz / n)) µs CPU per request" \
  "(server $(((s1 - s0) * 1000000 / hz / n)) µs)"
