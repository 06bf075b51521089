#!/usr/bin/env bash
# uproc's futures on smol in a build with no tokio at all, then on a hand-rolled block_on.
# The package pulls tokio only behind its `tokio` feature; prove the default build has none.
set -euo pipefail
if cargo tree --locked -p uproc-portability -e normal,dev --prefix none | grep -q '^tokio '; then
  echo "uproc-portability's default build depends on tokio: the smol check would prove nothing"
  exit 1
fi
cargo test --locked -p uproc-portability
