#!/usr/bin/env bash
# Make sure cargo, rustfmt and clippy are there. The machine's toolchain is managed by
# rustup; components are added only when missing (the registry-only network may refuse).
set -euo pipefail
command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)"; exit 1; }
cargo --version
for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$comp"
  fi
done
cargo fmt --version
cargo clippy --version
