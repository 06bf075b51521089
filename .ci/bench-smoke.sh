#!/usr/bin/env bash
# A short threadspawn run over every profile so the harness cannot rot. It exits non-zero
# if a life cycle fails or the lock counts per life cycle are not the expected ones.
set -euo pipefail
cargo run --release --locked -p uproc-benches --bin threadspawn -- --profile all --seconds 0.2 --repeats 1 --workers 1,2
