#!/usr/bin/env bash
# Loom models of the lock-free structures, in their own target dir so the cfg(loom)
# build does not invalidate the normal one.
set -euo pipefail
export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR=target/loom
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
for t in crates/*/tests/loom_*.rs; do
  [ -e "$t" ] || continue
  crate=$(basename "$(dirname "$(dirname "$t")")")
  name=$(basename "$t" .rs)
  pkg="uproc-$crate"; [ "$crate" = uproc ] && pkg=uproc
  echo "--- loom: $pkg $name"
  cargo test --release --locked -p "$pkg" --test "$name"
done
