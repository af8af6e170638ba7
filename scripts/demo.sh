#!/usr/bin/env bash
# The main job: the gate-supervisor app on a demo event that it sets up itself on first
# start — an issuer key, 200 printable tickets (demo/app/tickets/tickets.pdf), and a second
# gate on loopback ("Side-Door") so the mesh and the dashboard have something to show.
# Sign in with a PIN shown on screen; scan the PDF's codes with a USB scanner, the camera or
# by typing. Nothing to configure. Without a display (a server, CI), the app runs on a
# virtual screen instead, takes a screenshot, admits a ticket through its local API, and the
# command-line walkthrough (scripts/demo-headless.sh) follows.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/env.sh

build_release
app="$CARGO_TARGET_DIR/release/gatemesh-app"
demo=${GATEMESH_DEMO_DIR:-$PWD/demo}/app
mkdir -p "$demo"

if [[ -n ${DISPLAY:-} || -n ${WAYLAND_DISPLAY:-} ]]; then
  echo "gatemesh: the demo event lives in $demo (delete it to start over)"
  exec "$app" --demo --data "$demo"
fi

echo "No display here: the app runs on a virtual screen (Xvfb) for a look, then the walkthrough."
n=90
while [[ -e /tmp/.X$n-lock || -e /tmp/.X11-unix/X$n ]]; do n=$((n + 1)); done
Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
out=$(mktemp)
cleanup() { kill "${pid:-}" "$xvfb" 2>/dev/null || true; rm -f "$out"; }
trap cleanup EXIT
for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$n ]] && break; sleep 0.1; done
DISPLAY=":$n" "$app" --demo --data "$demo" >"$out" 2>/dev/null &
pid=$!
for _ in $(seq 100); do [[ -s $out ]] && break; sleep 0.1; done
api=$(sed -n 's/.*"api":"\([^"]*\)".*/\1/p' "$out")
[[ -n $api ]] || { echo "the app did not start" >&2; exit 1; }
# Every call to the local API sends the gate's token (api.token in its data directory).
token_file=$(sed -n 's/.*"api_token":"\([^"]*\)".*/\1/p' "$out")
auth="authorization: Bearer $(cat "$token_file")"
# A picture of its window with ImageMagick's import (scripts/install-deps.sh installs it),
# taken once the UI has drawn its sign-in screen (over a thousand colours; the "Starting…"
# placeholder has about 130), or after 30 seconds whatever it shows.
shot=$demo/screenshot.png
shot_ok=
for _ in $(seq 60); do
  if DISPLAY=":$n" import -window root "$shot"; then
    shot_ok=1
    colours=$(convert "$shot" -format '%k' info: 2>/dev/null || echo 0)
    ((colours > 400)) && break
  else
    shot_ok=
    break
  fi
  sleep 0.5
done
if [[ -n $shot_ok ]]; then
  echo "A screenshot of its window: $shot"
else
  echo "No screenshot: ImageMagick's import failed (above)." >&2
fi
code=$(sed -n 2p "$demo/tickets/tickets.csv" | cut -d, -f5)
echo "A ticket from $demo/tickets/tickets.pdf, scanned through the app's local API ($api):"
curl -s -X POST "$api/v1/scan" -H "$auth" -H 'content-type: application/json' \
  -d "{\"code\":\"$code\",\"scanner\":\"demo\"}"
echo
echo "The app's gate and its mesh peer, the demo's second gate on loopback:"
curl -s -H "$auth" "$api/v1/status" | sed 's/.*"peers":\[\([^]]*\)\].*/  \1/'
echo
kill "$pid"
wait "$pid" 2>/dev/null || true
# exec skips the EXIT trap: stop the virtual screen first.
cleanup
trap - EXIT
echo
exec scripts/demo-headless.sh
