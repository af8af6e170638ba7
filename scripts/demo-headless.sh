#!/usr/bin/env bash
# The command-line walkthrough (no window needed): make an issuer key, issue a small batch
# of tickets with a printable PDF, verify one ticket the way a gate does, read one back from
# its image, run a headless gate on loopback, and say where everything is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/env.sh

build_release
gatemesh="$CARGO_TARGET_DIR/release/gatemesh"
demo=${GATEMESH_DEMO_DIR:-$PWD/demo}
event=DEMO-2026
mkdir -p "$demo"

if [[ ! -f $demo/keys/issuer.key.pem ]]; then
  "$gatemesh" keygen --out "$demo/keys"
fi
n=1
while [[ -e $demo/batch-$n ]]; do n=$((n + 1)); done
batch=$demo/batch-$n
printf 'seat\n' >"$demo/seats.csv"
for row in A B C; do for seat in $(seq 1 8); do printf 'Row %s Seat %s\n' "$row" "$seat"; done; done >>"$demo/seats.csv"

echo
"$gatemesh" issue --key "$demo/keys/issuer.key.pem" --event "$event" --seats "$demo/seats.csv" \
  --valid-until "$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)" --out "$batch"

tid=$(sed -n 2p "$batch/tickets.csv" | cut -d, -f1)
echo
echo "A gate checks ticket $tid from its PNG, offline, with only the public key:"
echo "  \$ gatemesh decode $batch/png/$tid.png | gatemesh verify --issuer $demo/keys/issuer.pub.pem --event $event -"
"$gatemesh" decode "$batch/png/$tid.png" | "$gatemesh" verify --issuer "$demo/keys/issuer.pub.pem" --event "$event" -
echo
echo "The same ticket presented at another event's gate:"
"$gatemesh" decode "$batch/png/$tid.png" | "$gatemesh" verify --issuer "$demo/keys/issuer.pub.pem" --event OTHER-2026 - || true
echo
echo "A headless gate on this laptop (loopback only, no mesh): the ticket twice, then a forgery."
gate_out=$(mktemp)
"$gatemesh" gate --data "$demo/gate-north" --event "$event" --name North-1 \
  --issuer "$demo/keys/issuer.pub.pem" --manifest "$batch/tickets.csv" --api 127.0.0.1:0 >"$gate_out" 2>/dev/null &
gate_pid=$!
trap 'kill $gate_pid 2>/dev/null || true; rm -f "$gate_out"' EXIT
for _ in $(seq 100); do [[ -s $gate_out ]] && break; sleep 0.1; done
api=$(sed -n 's/.*"api":"\([^"]*\)".*/\1/p' "$gate_out")
# Every call to the gate's API sends its token, made on first start in its data directory.
auth="authorization: Bearer $("$gatemesh" token --data "$demo/gate-north")"
code=$(sed -n 3p "$batch/tickets.csv" | cut -d, -f5)
for scanner in north-1 north-2; do
  echo "  scanner $scanner:"
  curl -s -X POST "http://$api/v1/scan" -H "$auth" -H 'content-type: application/json' \
    -d "{\"code\":\"$code\",\"scanner\":\"$scanner\"}"
  echo
done
echo "  a forged code:"
curl -s -X POST "http://$api/v1/scan" -H "$auth" -H 'content-type: application/json' \
  -d "{\"code\":\"${code%?????}AAAAA\",\"scanner\":\"north-1\"}"
echo
kill "$gate_pid"
wait "$gate_pid" 2>/dev/null || true
echo "The gate's ledger is in $demo/gate-north (try: $gatemesh gate --help)."
echo
echo "The central server (HTTPS with a certificate it makes itself), and a gate paired to it"
echo "with the link an organizer shows as a QR code; the link pins the server's certificate."
server_out=$(mktemp)
admin=demo-admin-token-$(date +%s)
"$gatemesh" server --data "$demo/server-$n" --listen 127.0.0.1:0 --admin-token "$admin" \
  >"$server_out" 2>/dev/null &
server_pid=$!
trap 'kill $gate_pid $server_pid 2>/dev/null || true; rm -f "$gate_out" "$server_out"' EXIT
for _ in $(seq 100); do [[ -s $server_out ]] && break; sleep 0.1; done
server=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$server_out")
organizer=(curl -s --cacert "$demo/server-$n/tls/cert.pem" -H "authorization: Bearer $admin"
  -H 'content-type: application/json')
"${organizer[@]}" -X POST "$server/v1/events" -d "{\"id\":\"$event\",\"name\":\"Demo night\"}" >/dev/null
link=$("${organizer[@]}" -X POST "$server/v1/events/$event/devices" -d '{"name":"North-1","role":"gate"}' |
  sed -n 's/.*"link":"\([^"]*\)".*/\1/p')
echo "  the pairing link: $link"
echo "  \$ gatemesh pair --link '<that link>' --out $demo/paired-north-$n"
"$gatemesh" pair --link "$link" --out "$demo/paired-north-$n"
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
echo "  start that gate with: $gatemesh gate --data $demo/gate-paired --paired $demo/paired-north-$n"
echo
echo "Print $batch/tickets.pdf; the ticket list is $batch/tickets.csv."
echo "The gatemesh binary is $gatemesh (try: $gatemesh --help)."
