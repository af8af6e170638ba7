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
