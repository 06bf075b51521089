#!/usr/bin/env bash
# rustdoc with warnings as errors: broken intra-doc links fail CI.
set -euo pipefail
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --all-features
