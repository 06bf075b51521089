#!/usr/bin/env bash
# Loom models of the lock-free structures, in their own target dir so the cfg(loom)
# build does not invalidate the normal one.
#
# Every model is built by ONE cargo invocation (one `-p` per crate that has models, one
# `--test` per model file): the shared dependencies (loom, parking_lot, tracing, ...)
# are compiled once instead of once per model. Adding a `tests/loom_*.rs` file to any
# crate adds it here with no edit.
set -euo pipefail
export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR=target/loom
# The models gain nothing from the release profile's whole-workspace optimisation and
# would pay its link time once per model binary.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
# No debug info: a failing model's panic names its file:line without it, and the build
# is a fraction of the size (CI machines' disks can be nearly full).
export CARGO_PROFILE_RELEASE_DEBUG=0
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
args=()
declare -A pkgs=()
for t in crates/*/tests/loom_*.rs; do
  [ -e "$t" ] || continue
  crate=$(basename "$(dirname "$(dirname "$t")")")
  pkg="uproc-$crate"; [ "$crate" = uproc ] && pkg=uproc
  if [ -z "${pkgs[$pkg]:-}" ]; then
    pkgs[$pkg]=1
    args+=(-p "$pkg")
  fi
  args+=(--test "$(basename "$t" .rs)")
done
if [ ${#args[@]} -eq 0 ]; then
  echo "no loom models found" >&2
  exit 1
fi
echo "--- loom: ${args[*]}"
cargo test --release --locked "${args[@]}"
