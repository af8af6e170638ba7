#!/usr/bin/env bash
# Installs what building and testing gatemesh needs on Debian 12 / Ubuntu, as root, and
# nothing that is already there. Safe to run again and again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: C toolchain, WebKitGTK for the Tauri shell, zbar and poppler as independent
# QR and PDF readers for the tests, Node.js for the UI and the jose interoperability checks.
# PostgreSQL for the server's second storage backend (the tests start a throwaway cluster).
# WebKitGTK's WebDriver and Xvfb run the desktop app's end-to-end tests. systemd brings
# systemd-analyze, which checks the units in packaging/systemd. The desktop package's test
# runs lintian on the .deb, finds the app's window with xwininfo (x11-utils) and takes its
# picture with ImageMagick (as the demo does); zsh and fish read the completion scripts.
packages=(build-essential pkg-config curl libwebkit2gtk-4.1-dev zbar-tools poppler-utils
  postgresql webkit2gtk-driver xvfb systemd lintian x11-utils imagemagick zsh fish)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing Debian packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
  echo "installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may still be running its own apt job (the lock), and a mirror may drop a
  # download: wait for the lock, retry downloads, and try the whole step again before failing
  # (apt-get's exit code 100 is any of these).
  apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=5)
  for attempt in 1 2 3; do
    if apt-get "${apt_opts[@]}" update -qq &&
      apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
      break
    fi
    ((attempt < 3)) || { echo "apt-get failed three times" >&2; exit 1; }
    echo "apt-get failed (attempt $attempt); trying again in 20 s" >&2
    sleep 20
  done
fi

if ! command -v cargo >/dev/null; then
  echo "Rust is missing: install a stable toolchain (rustup.rs), 1.89 or newer" >&2
  exit 1
fi

# tauri-driver puts WebKitWebDriver behind the WebDriver protocol for the app's E2E tests.
cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin
if ! command -v tauri-driver >/dev/null && [[ ! -x $cargo_bin/tauri-driver ]]; then
  echo "installing tauri-driver" >&2
  cargo install tauri-driver --version '^2' --locked --quiet
fi

# npm packages, pinned by the lock files; reinstalled only when a lock file changed.
for dir in ui tools/jose; do
  if [[ ! -f $dir/node_modules/.package-lock.json || $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
    echo "installing npm packages in $dir" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
