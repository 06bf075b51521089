#!/usr/bin/env bash
set -euo pipefail
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy -p uproc --features tokio --all-targets --locked -- -D warnings
