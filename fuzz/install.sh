#!/usr/bin/env bash
# Installs the pinned cargo-fuzz if it is not there yet. cargo-fuzz itself builds on
# stable; the targets need the nightly toolchain (`cargo +nightly fuzz ...`).
set -euo pipefail
CARGO_FUZZ_VERSION=0.13.1
if cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
  exit 0
fi
cargo +stable install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "note: the fuzz targets need a nightly toolchain: rustup toolchain install nightly" >&2
fi
