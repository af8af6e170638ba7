#!/usr/bin/env bash
# The desktop app's .deb, checked the way a user meets it: built from the test build's
# debug binaries (scripts/package.sh --debug), its control data (name, version from the
# workspace, dependencies), lintian with no errors and no warnings (and no overrides), its
# files, and the app started
# from the unpacked package under Xvfb: on a fresh machine its window shows the first-run
# screen, and with --demo its local API answers. Needs the debug build of gatemesh-app and
# gatemesh (scripts/test.sh runs this after the tests built them).
set -Eeuo pipefail
# A command that fails outside a check ends the script: say which, not just the exit code.
trap 'echo "package: line $LINENO failed: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
source scripts/env.sh

fail() {
  echo "package: $*" >&2
  exit 1
}

deb=$(scripts/package.sh --debug)
[[ -f $deb ]] || fail "scripts/package.sh made no .deb"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[[ -n $version ]] || fail "no workspace version in Cargo.toml"

# Control data.
field() { dpkg-deb --field "$deb" "$1"; }
[[ $(field Package) == gatemesh ]] || fail "package name $(field Package), not gatemesh"
[[ $(field Version) == "$version" ]] || fail "version $(field Version), not the workspace's $version"
[[ $(field Architecture) == "$(dpkg --print-architecture)" ]] || fail "architecture $(field Architecture)"
depends=$(field Depends)
for dep in libwebkit2gtk-4.1-0 libgtk-3-0 libc6; do
  [[ ",$depends," == *", $dep"[,\ ]* || ",$depends," == *",$dep"[,\ ]* ]] || fail "Depends lacks $dep: $depends"
done

# Lintian: no errors, no warnings; the package ships no overrides.
lintian --fail-on error,warning --tag-display-limit 0 "$deb" >&2 || fail "lintian found faults in $deb"

# Files.
root=$(mktemp -d)
xvfb=
pids=()
cleanup() {
  for p in "${pids[@]}" $xvfb; do kill "$p" 2>/dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT
dpkg-deb -x "$deb" "$root/pkg"
for f in usr/bin/gatemesh-app usr/bin/gatemesh usr/share/applications/gatemesh.desktop \
  usr/share/icons/hicolor/128x128/apps/gatemesh-app.png \
  usr/share/bash-completion/completions/gatemesh usr/share/zsh/vendor-completions/_gatemesh \
  usr/share/fish/vendor_completions.d/gatemesh.fish usr/share/man/man1/gatemesh.1.gz \
  usr/share/man/man1/gatemesh-issue.1.gz usr/share/doc/gatemesh/copyright; do
  [[ -e $root/pkg/$f ]] || fail "no /$f in the package"
done
grep -qx 'Exec=gatemesh-app' "$root/pkg/usr/share/applications/gatemesh.desktop" ||
  fail "the desktop entry does not start gatemesh-app"
[[ $("$root/pkg/usr/bin/gatemesh" --version) == "gatemesh $version" ]] || fail "the packaged gatemesh is not $version"
bash -n "$root/pkg/usr/share/bash-completion/completions/gatemesh" || fail "its bash completion does not parse"

# The packaged app on a virtual screen.
n=90
while [[ -e /tmp/.X$n-lock || -e /tmp/.X11-unix/X$n ]]; do n=$((n + 1)); done
Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$n ]] && break; sleep 0.1; done
export DISPLAY=":$n"

# The app's window by its title, and its picture (kept in $shots) once the UI has drawn a
# screen: a blank window has one or two colours, the "Starting…" placeholder about 130, the
# set-up and sign-in screens over a thousand.
shots=$CARGO_TARGET_DIR/package/screenshots
mkdir -p "$shots"
window_drawn() {
  local id=
  for _ in $(seq 150); do
    # xwininfo fails now and then while windows come and go under it (and `head` may close
    # the pipe early): under `set -e -o pipefail` that ended this script with no message.
    id=$(xwininfo -root -tree 2>/dev/null | sed -n 's/^ *\(0x[0-9a-f]*\) "gatemesh — gate".*/\1/p' | head -n 1) || id=
    [[ -n $id ]] && break
    sleep 0.2
  done
  [[ -n $id ]] || fail "$1: no window titled 'gatemesh — gate'"
  local colours=0
  for _ in $(seq 120); do
    import -window "$id" "$shots/$1.png" 2>/dev/null &&
      colours=$(convert "$shots/$1.png" -format '%k' info:) && ((colours > 400)) && break
    sleep 0.5
  done
  ((colours > 400)) || fail "$1: the window drew no screen ($colours colours, $shots/$1.png)"
}

# A fresh machine: no gate set up, so the first-run screen (pair, or set up from files) and
# no local API yet.
home=$root/home
mkdir -p "$home"
HOME=$home XDG_DATA_HOME=$home/.local/share "$root/pkg/usr/bin/gatemesh-app" >"$root/first.out" 2>"$root/first.err" &
pids+=($!)
window_drawn first-run
[[ ! -s $root/first.out ]] || fail "a gate that is not set up announced an API: $(cat "$root/first.out")"
kill "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true

# The demo event: the local API answers with the token from the data directory.
"$root/pkg/usr/bin/gatemesh-app" --demo --data "$root/demo" >"$root/demo.out" 2>"$root/demo.err" &
pids+=($!)
for _ in $(seq 300); do [[ -s $root/demo.out ]] && break; sleep 0.1; done
api=$(sed -n 's/.*"api":"\([^"]*\)".*/\1/p' "$root/demo.out")
[[ -n $api ]] || fail "the demo app did not start: $(cat "$root/demo.err")"
token_file=$(sed -n 's/.*"api_token":"\([^"]*\)".*/\1/p' "$root/demo.out")
window_drawn demo
status=$(curl -sf -H "authorization: Bearer $(cat "$token_file")" "$api/v1/status") ||
  fail "the demo app's API did not answer /v1/status"
[[ $status == *'"event"'* ]] || fail "unexpected status: $status"
code=$(curl -s -o /dev/null -w '%{http_code}' "$api/v1/status")
[[ $code == 401 ]] || fail "the demo app's API answered $code without its token"
# The first-run screen and the demo's sign-in screen are different pictures.
diff=$(compare -metric AE "$shots/first-run.png" "$shots/demo.png" null: 2>&1 || true)
((${diff%% *} > 10000)) || fail "the first-run and demo windows look alike ($diff pixels differ)"
echo "package: $deb ($version) passes lintian, unpacks, and its app starts (first run and demo)"
