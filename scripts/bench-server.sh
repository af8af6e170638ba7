#!/usr/bin/env bash
# The central server's redemptions against the raw database doing the same job, on loopback:
#   1. raw PostgreSQL: pgbench runs tools/pgbench/redeem.sql (distinct tickets, then all
#      clients racing on one ticket at a time), with the extended protocol (-M prepared) and
#      the simple one;
#   2. `gatemesh server` on SQLite (a fresh data directory per run) under
#      `gatemesh bench server`, both modes;
#   3. the same on PostgreSQL (`--db postgres://…`, a fresh database per run); a build
#      without PostgreSQL storage says so, and that part is skipped.
# The two runs the target compares (pgbench prepared, gatemesh on PostgreSQL) alternate for
# ROUNDS rounds per mode, so a machine that slows down or speeds up meanwhile weighs on both;
# each is reported by its median round (all rounds' rates kept in the reports).
# Writes docs/bench-server-*.json and prints a summary with the ratio gatemesh / raw.
# Everything it starts is stopped on exit; a PostgreSQL it found running is left running.
# Usage: scripts/bench-server.sh   (env: CLIENTS=16 DURATION=10 HOT_GROUP=40 TICKETS=100000
#                                   ROUNDS=3 PLAIN=0: 1 serves plain HTTP on loopback
#                                   MODES="distinct hot": the modes to run)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
source scripts/env.sh

clients=${CLIENTS:-16}
secs=${DURATION:-10}
rounds=${ROUNDS:-3}
read -r -a modes <<<"${MODES:-distinct hot}"
group=${HOT_GROUP:-40}
# Enough for a distinct run not to run out before DURATION (it stops early and says so).
distinct_tickets=${TICKETS:-100000}
hot_tickets=${HOT_TICKETS:-5000}
raw_tickets=${RAW_TICKETS:-1000000}
threads=$(nproc)
((threads > clients)) && threads=$clients

for tool in jq psql pgbench pg_isready; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench-server: $tool is missing (PostgreSQL client tools and jq are needed)" >&2
    exit 1
  fi
done

cargo build --quiet --release -p gatemesh-cli --locked
gm="$CARGO_TARGET_DIR/release/gatemesh"

work=$(mktemp -d)
server_pid=
databases=()
pg_port=${GATEMESH_PG_PORT:-55432}
pg_was_running=0
pg_isready -q -h 127.0.0.1 -p "$pg_port" && pg_was_running=1
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  for db in "${databases[@]}"; do
    psql "$url" -q -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  done
  ((pg_was_running)) || scripts/pg.sh stop
  rm -rf "$work"
}
url=
trap cleanup EXIT
trap 'exit 130' INT TERM
url=$(scripts/pg.sh start)

# A fresh database on the throwaway cluster (dropped on exit); sets $db_url.
new_db() {
  local db="gm_bench_$1_$$"
  databases+=("$db")
  PGOPTIONS='-c client_min_messages=warning' psql "$url" -q -v ON_ERROR_STOP=1 \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  db_url="${url%/*}/$db"
}

# Percentile p (0..1) of a sorted file of microseconds, in ms; same rank as the Rust bench.
pct() {
  awk -v p="$2" -v n="$(wc -l <"$1")" 'NR == int((n - 1) * p + 0.5) + 1 { printf "%.3f", $1 / 1000; exit }' "$1"
}

# ---- 1. raw PostgreSQL with pgbench -------------------------------------------------------
new_db raw
raw_url=$db_url
pg_version=$(psql "$raw_url" -Atc 'SHOW server_version')
sync_commit=$(psql "$raw_url" -Atc 'SHOW synchronous_commit')
echo '[]' >"$work/raw.json"
raw_run() {
  local mode=$1 proto=$2 round=$3 vars log="$work/pgb-$1-$2-$3"
  if [[ $mode == distinct ]]; then
    vars=(-D hot=0 -D "clients=$clients" -D n=0)
  else
    vars=(-D hot=1 -D "group=$group")
  fi
  psql "$raw_url" -q -v ON_ERROR_STOP=1 -v "tickets=$raw_tickets" -f tools/pgbench/setup.sql
  echo "pgbench: $mode, -M $proto, $clients clients, $secs s…" >&2
  pgbench -n -M "$proto" -c "$clients" -j "$threads" -T "$secs" -l --log-prefix="$log" \
    "${vars[@]}" -f tools/pgbench/redeem.sql "$raw_url" >"$log.out" 2>"$log.err" || {
    cat "$log.out" "$log.err" >&2
    exit 1
  }
  cat "$log".[0-9]* | awk '{ print $3 }' | sort -n >"$log.lat"
  local tps txns failed redemptions used tickets_hit ok=true
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$log.out")
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log.out")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$log.out")
  read -r redemptions used tickets_hit < <(psql "$raw_url" -AtF ' ' -c \
    "SELECT (SELECT count(*) FROM bench_redemptions),
            (SELECT count(*) FROM bench_tickets WHERE status = 'used'),
            (SELECT count(DISTINCT tid) FROM bench_redemptions)")
  # Distinct: every transaction recorded and used a fresh ticket. Hot: every ticket asked for
  # was used, once (the UPDATE's status filter makes more impossible).
  if [[ $mode == distinct ]]; then
    [[ $redemptions == "$txns" && $used == "$txns" ]] || ok=false
  else
    [[ $redemptions == "$txns" && $used == "$tickets_hit" ]] || ok=false
  fi
  jq --arg mode "$mode" --arg proto "$proto" --argjson round "$round" --argjson tps "${tps:-0}" \
    --argjson txns "${txns:-0}" --argjson failed "${failed:-0}" \
    --argjson p50 "$(pct "$log.lat" 0.50)" --argjson p90 "$(pct "$log.lat" 0.90)" \
    --argjson p99 "$(pct "$log.lat" 0.99)" --argjson max "$(pct "$log.lat" 1)" \
    --argjson redemptions "$redemptions" --argjson used "$used" --argjson hit "$tickets_hit" \
    --argjson ok "$ok" \
    '. + [{mode: $mode, protocol: $proto, round: $round, tps: ($tps | round), transactions: $txns,
           failed: $failed, latency_ms: {p50: $p50, p90: $p90, p99: $p99, max: $max},
           checks: {ok: $ok, redemptions: $redemptions, tickets_used: $used,
                    tickets_asked: $hit}}]' \
    "$work/raw.json" >"$work/raw.next" && mv "$work/raw.next" "$work/raw.json"
  [[ $ok == true ]] || {
    echo "pgbench $mode/$proto: check failed (txns $txns, redemptions $redemptions, used $used, asked $tickets_hit)" >&2
    exit 1
  }
}
# The simple protocol once per mode; the prepared one alternates with gatemesh below.
for mode in "${modes[@]}"; do raw_run "$mode" simple 1; done
write_raw() {
  jq --arg v "$pg_version" --arg sc "$sync_commit" --argjson clients "$clients" \
    --argjson threads "$threads" --argjson secs "$secs" --argjson group "$group" \
    --argjson tickets "$raw_tickets" --argjson cores "$(nproc)" --argjson rounds "$rounds" \
    '{tool: "pgbench -n (no vacuum), tools/pgbench/redeem.sql", postgres: $v,
    synchronous_commit: $sc, clients: $clients, threads: $threads, duration_s: $secs, rounds: $rounds,
    hot_group: $group, tickets: $tickets, machine: {cores: $cores}, runs: .}' \
    "$work/raw.json" >docs/bench-server-pgbench.json
}

# ---- 2 and 3. gatemesh server -------------------------------------------------------------
GATEMESH_ADMIN_TOKEN="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export GATEMESH_ADMIN_TOKEN

# Starts `gatemesh server` on a fresh data directory (extra args passed on); sets $server_url
# and $fingerprint (empty for plain HTTP).
# Returns 1 when the server exits before listening, its stderr in $work/NAME.err.
start_server() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  local plain=()
  [[ ${PLAIN:-0} == 1 ]] && plain=(--plain-http)
  "$gm" server --data "$work/$name" --listen 127.0.0.1:0 "${plain[@]}" "$@" >"$work/$name.out" 2>"$work/$name.err" &
  server_pid=$!
  for _ in $(seq 300); do
    server_url=$(jq -r '.url // empty' "$work/$name.out" 2>/dev/null | head -n 1)
    fingerprint=$(jq -r '.fingerprint // empty' "$work/$name.out" 2>/dev/null | head -n 1)
    [[ -n $server_url ]] && return 0
    if ! kill -0 "$server_pid" 2>/dev/null; then
      wait "$server_pid" || true
      server_pid=
      return 1
    fi
    sleep 0.1
  done
  echo "bench-server: $name did not start listening within 30 s" >&2
  exit 1
}
stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
gm_bench() {
  local store=$1 mode=$2 tickets=$3 report=${4:-docs/bench-server-$1-$2.json}
  echo "gatemesh server on $store: $mode…" >&2
  # Over HTTPS, as gates reach the server (PLAIN=1 serves plain HTTP on loopback instead).
  local pin=()
  [[ -n $fingerprint ]] && pin=(--fingerprint "$fingerprint")
  "$gm" bench server --url "$server_url" "${pin[@]}" --clients "$clients" --tickets "$tickets" \
    --duration-secs "$secs" --mode "$mode" --hot-group "$group" \
    --report "$report" >/dev/null
  if [[ $(jq -r .stopped_by "$report") == tickets ]]; then
    echo "  note: the $mode run used up its $tickets tickets before $secs s (raise TICKETS)" >&2
  fi
}
tickets_for() { if [[ $1 == distinct ]]; then echo "$distinct_tickets"; else echo "$hot_tickets"; fi; }

for mode in "${modes[@]}"; do
  if ! start_server "sqlite-$mode"; then
    cat "$work/sqlite-$mode.err" >&2
    exit 1
  fi
  gm_bench sqlite "$mode" "$(tickets_for "$mode")"
  stop_server
done

# PostgreSQL: ROUNDS rounds of pgbench prepared then gatemesh, per mode; each series is
# reported by its median round.
pg_stores=(postgres)
for mode in "${modes[@]}"; do
  for round in $(seq "$rounds"); do
    raw_run "$mode" prepared "$round"
    new_db "srv_${mode}_$round"
    if ! start_server "postgres-$mode-$round" --db "$db_url"; then
      if grep -q "not built yet" "$work/postgres-$mode-$round.err"; then
        echo "gatemesh server on PostgreSQL: skipped ($(head -n 1 "$work/postgres-$mode-$round.err"))" >&2
        pg_stores=()
        continue
      fi
      cat "$work/postgres-$mode-$round.err" >&2
      exit 1
    fi
    gm_bench postgres "$mode" "$(tickets_for "$mode")" "$work/postgres-$mode-$round.json"
    stop_server
  done
  if ((${#pg_stores[@]})); then
    # The median round's report, with every round's rate beside it.
    jq -s 'sort_by(.requests_per_s) as $r
      | $r[(($r | length) / 2 | floor)] + {rounds: [.[] | .requests_per_s]}' \
      "$work/postgres-$mode-"*.json >"docs/bench-server-postgres-$mode.json"
  fi
done
write_raw

# ---- summary ------------------------------------------------------------------------------
# A series' median round.
raw_tps() {
  jq -r --arg m "$1" --arg p "$2" '[.runs[] | select(.mode == $m and .protocol == $p) | .tps]
    | sort | .[(length / 2 | floor)]' docs/bench-server-pgbench.json
}
echo
echo "PostgreSQL $pg_version (synchronous_commit=$sync_commit), $clients clients, $secs s, $(nproc) cores, loopback"
echo "pgbench prepared and gatemesh on PostgreSQL: median of $rounds alternating rounds"
row() { printf '%-9s %-24s %8s %8s %8s %8s %8s %14s\n' "$@"; }
row mode run "per s" "p50 ms" "p90 ms" "p99 ms" "max ms" "/ raw prepared"
for mode in "${modes[@]}"; do
  prep=$(raw_tps "$mode" prepared)
  for proto in prepared simple; do
    jq -r --arg m "$mode" --arg p "$proto" --argjson base "$prep" '[.runs[]
      | select(.mode == $m and .protocol == $p)] | sort_by(.tps) | .[(length / 2 | floor)]
      | [$m, "pgbench -M \($p)", .tps, .latency_ms.p50, .latency_ms.p90, .latency_ms.p99,
         .latency_ms.max, (.tps / $base)] | @tsv' docs/bench-server-pgbench.json
  done | while IFS=$'\t' read -r m r n p50 p90 p99 max ratio; do
    row "$m" "$r" "$n" "$p50" "$p90" "$p99" "$max" "$(printf '%.2f' "$ratio")"
  done
  for store in sqlite "${pg_stores[@]}"; do
    f="docs/bench-server-$store-$mode.json"
    jq -r --arg s "$store" --argjson base "$prep" '[.mode, "gatemesh server, \($s)", .requests_per_s,
        .latency_ms.p50, .latency_ms.p90, .latency_ms.p99, .latency_ms.max,
        (.requests_per_s / $base)] | @tsv' "$f" |
      while IFS=$'\t' read -r m r n p50 p90 p99 max ratio; do
        row "$m" "$r" "$n" "$p50" "$p90" "$p99" "$max" "$(printf '%.2f' "$ratio")"
      done
  done
done
((${#pg_stores[@]})) || echo "(gatemesh on PostgreSQL skipped: this build's server has no PostgreSQL storage)"
reports=(docs/bench-server-pgbench.json)
for store in sqlite "${pg_stores[@]}"; do reports+=("docs/bench-server-$store-"{distinct,hot}.json); done
echo "reports: ${reports[*]}"
