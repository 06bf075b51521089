#!/usr/bin/env bash
# The stress and soak runs at their quick sizes, every profile: invariants at rest, RSS
# flat after warm-up, no autoreaped child seen by a waiter. Exits non-zero otherwise.
set -euo pipefail
cargo run --release --locked -p uproc-soak -- --quick
