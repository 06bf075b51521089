#!/usr/bin/env bash
set -euo pipefail
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
# uproc alone, without the features the other packages turn on.
cargo clippy -p uproc --all-targets --locked -- -D warnings
