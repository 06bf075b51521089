#!/usr/bin/env bash
# The 1..16 worker sweep of threadspawn for every profile, with peers, written to a file,
# with the chart beside it (OUTFILE with .svg). Every measured row carries the model's
# prediction for that worker count from the row's own inputs (columns predicted* and
# err%), and the prediction table extends each profile to 64 workers from the inputs
# at the most workers measured: predictions are labelled as such.
#
#   benches/sweep.sh [OUTFILE]          (default: benches/sweep-<host>-<UTC date>.txt)
#
# Environment:
#   BODIES      bodies to measure (default "none,tokio": bookkeeping, and tokio bodies
#               for the ratio against bare tokio)
#   WORKERS     worker counts (default 1,2,4,8,12,16)
#   SECONDS_PER_RUN, REPEATS   (default 1 and 3)
#   THREADSPAWN path to an already built threadspawn binary: skips the build (for a
#               machine without a toolchain or registry access)
#
# Budget on 16 cores: a release build (~1 min cold), then
# repeats x workers x (profiles x bodies + 3 peers) runs of 1 s: 3 x 6 x 7 = 126 s for
# two profiles and two bodies (+36 s per further profile).
set -euo pipefail
cd "$(dirname "$0")/.."

BODIES=${BODIES:-none,tokio}
WORKERS=${WORKERS:-1,2,4,8,12,16}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-1}
REPEATS=${REPEATS:-3}
OUT=${1:-benches/sweep-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ).txt}

if [ -z "${THREADSPAWN:-}" ]; then
  cargo build --release --locked -p uproc-benches --bin threadspawn
  THREADSPAWN="${CARGO_TARGET_DIR:-target}/release/threadspawn"
fi

args=(--profile all --workers "$WORKERS" --seconds "$SECONDS_PER_RUN" --repeats "$REPEATS" --body "$BODIES" --peers --plot "${OUT%.txt}.svg")
{
  echo "# command: threadspawn ${args[*]}"
  echo "# date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "# machine: $(nproc) CPUs, $(uname -srm)"
  grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/^/# cpu:     /' || true
  echo
} >"$OUT"

status=0
"$THREADSPAWN" "${args[@]}" | tee -a "$OUT" || status=$?
echo "sweep written to $OUT (threadspawn exit status $status)" >&2
exit "$status"
