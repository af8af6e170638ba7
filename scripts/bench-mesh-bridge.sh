#!/usr/bin/env bash
# Mesh propagation across a real (virtual) LAN: two network namespaces joined by veth pairs to
# a bridge in a third, as in the tests. Gate B runs as `gatemesh gate` in one namespace; the
# bench runs gate A in the other and times each admission at A until B's API knows it.
# As root. Everything it creates is removed on exit. Usage: scripts/bench-mesh-bridge.sh [SAMPLES]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo build --quiet --locked --release -p gatemesh-cli
gm="$CARGO_TARGET_DIR/release/gatemesh"
samples=${1:-500}
p="gmb$$"
work=$(mktemp -d)
cleanup() {
  [[ -n ${gate_pid:-} ]] && kill "$gate_pid" 2>/dev/null || true
  for ns in "${p}a" "${p}b" "${p}hub"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "${p}hub"
ip -n "${p}hub" link add br0 type bridge mcast_snooping 0
ip -n "${p}hub" link set br0 up
i=1
for h in a b; do
  ip netns add "$p$h"
  ip -n "${p}hub" link add "hv$h" type veth peer name eth0 netns "$p$h"
  ip -n "${p}hub" link set "hv$h" master br0 up
  ip -n "$p$h" addr add "10.78.0.$i/24" dev eth0
  ip -n "$p$h" link set eth0 up
  ip -n "$p$h" link set lo up
  i=$((i + 1))
done
"$gm" keygen --out "$work/keys" >/dev/null
"$gm" mesh-ca --event BRIDGE-2026 --out "$work/ca" >/dev/null
"$gm" enroll --ca "$work/ca" --name gate-b --out "$work/id-b" >/dev/null
ip netns exec "${p}b" "$gm" gate --data "$work/data-b" --event BRIDGE-2026 --name gate-b \
  --issuer "$work/keys/issuer.pub.pem" --api 10.78.0.2:7070 --api-public --identity "$work/id-b" \
  --mesh 10.78.0.2:7400 --discovery off >/dev/null 2>&1 &
gate_pid=$!
sleep 1
GATEMESH_API_TOKEN=$(cat "$work/data-b/api.token") \
ip netns exec "${p}a" "$gm" bench mesh-remote --ca "$work/ca" --keys "$work/keys" --event BRIDGE-2026 \
  --bind 10.78.0.1:7400 --peer 10.78.0.2:7400 --remote-api http://10.78.0.2:7070 --samples "$samples" \
  ${REPORT:+--report "$REPORT"}
