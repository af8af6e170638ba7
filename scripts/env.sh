# Sourced by the scripts: one cargo target directory outside the clone, shared by every
# checkout on this machine and reused when present (a clean clone builds only our own crates).
if [[ -z ${CARGO_TARGET_DIR:-} ]]; then
  if [[ -w /var/tmp ]]; then
    export CARGO_TARGET_DIR=/var/tmp/gatemesh-target
  else
    export CARGO_TARGET_DIR=$PWD/target
  fi
fi
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

# Every checkout builds the workspace's own crates into the same files of a shared directory
# (their names do not depend on where the checkout is), and cargo judges them fresh by file
# times: a checkout whose sources are older than another checkout's last build would be taken
# as built and run that other checkout's code. So the directory remembers which checkout
# built in it last, and another one first removes the workspace crates' artifacts, and the
# vendored automerge's (a path dependency, named and judged the same way), never the
# registry dependencies'. The scripts source this file from the checkout's root. Two checkouts must
# not build or test at the same time in one directory (each would remove or overwrite what
# the other runs): give one of them its own CARGO_TARGET_DIR.
use_target_dir_from_here() {
  local mark=$CARGO_TARGET_DIR/.gatemesh-checkout
  if [[ -e $mark && $(<"$mark") != "$PWD" ]]; then
    echo "env.sh: $CARGO_TARGET_DIR was last built from $(<"$mark"); removing the workspace crates' and the vendored automerge's artifacts" >&2
    cargo clean --quiet --workspace
    cargo clean --quiet --workspace --release
    cargo clean --quiet -p automerge
  fi
  mkdir -p "$CARGO_TARGET_DIR"
  echo "$PWD" >"$mark"
}
use_target_dir_from_here

# The release build both demos run (scripts/demo.sh, scripts/demo-headless.sh): the app and
# the CLI in one cargo call, so both scripts ask for the same packages and features and the
# second finds everything built (building the CLI alone resolves other features and compiles
# dozens of crates again). The app embeds ui/dist, so the UI is built first; `custom-protocol`
# is the app's production build (what `tauri build` turns on), which the packages ship.
# Once per run: scripts/demo.sh hands over to demo-headless.sh with it done (building ui/dist
# again would make cargo relink the app).
build_release() {
  [[ -z ${GATEMESH_RELEASE_BUILT:-} ]] || return 0
  (cd ui && npm run --silent build)
  cargo build --quiet --locked --release -p gatemesh-app -p gatemesh-cli \
    --features gatemesh-app/custom-protocol
  export GATEMESH_RELEASE_BUILT=1
}
