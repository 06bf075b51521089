#!/usr/bin/env bash
# Unused dependencies: cargo-machete reads every package's sources for each declared
# dependency. Installed here, pinned, when missing (it is not part of the toolchain).
set -euo pipefail
MACHETE_VERSION=0.9.2
if ! cargo machete --version 2>/dev/null | grep -q "$MACHETE_VERSION"; then
  cargo install cargo-machete --version "$MACHETE_VERSION" --locked
fi
# The workspace's packages. fuzz/ (a nightly cargo-fuzz package outside the workspace)
# is left out: its shared model file is included with `#[path]` from the fuzz target,
# which machete does not follow, so it would report uproc-pidns as unused.
cargo machete crates examples benches soak
