#!/usr/bin/env bash
# The README's run command: every tutorial example, each checking its own results.
set -euo pipefail
cargo run --release --locked -p uproc-examples --bin tour
