#!/usr/bin/env bash
# Every test gatemesh has: formatting, lints, the Rust test suite (unit, integration,
# property and doc tests; jose, zbar and poppler as outside referees), the UI type check and
# build, the jose fixtures re-checked by jose itself, and the desktop app's .deb (lintian, its
# files, the app started from the unpacked package).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/env.sh

echo "== ui: lint (eslint, prettier), unit tests (vitest), type check and build (the app embeds ui/dist)"
(cd ui && npm run --silent lint && npm test --silent && npm run --silent build)

echo "== jose agrees with the committed JWT fixtures"
node tools/jose/check-fixtures.mjs | tail -n 1

echo "== PostgreSQL for the server tests (a throwaway cluster on loopback)"
GATEMESH_TEST_PG=$(scripts/pg.sh start)
export GATEMESH_TEST_PG
trap 'scripts/pg.sh stop' EXIT

echo "== rustfmt, clippy"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo test --workspace --locked --doc
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi

echo "== the desktop package: the test build's binaries as a .deb (scripts/test-package.sh)"
scripts/test-package.sh
