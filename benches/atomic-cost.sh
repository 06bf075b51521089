#!/usr/bin/env bash
# The marginal wall-time cost of one uncontended atomic read-modify-write inside the
# bookkeeping life cycle, on this machine.
#
#   benches/atomic-cost.sh [PROFILE] [N] [ROUNDS] [PAD]     defaults: scalable 2000000 7 16
#
# Runs `target/release/atomiccost PROFILE N 0` and `... N PAD` alternately ROUNDS times
# (build it first: `cargo build --release -p uproc-benches --bin atomiccost`), takes the
# median wall time per life cycle of each, and prints the difference per padding atomic.
# Multiply by the life cycle's own atomics (`benches/atomics.sh`) for their share of it.
#
# Why: the life cycle's cost is roughly `a x instructions + b x atomics`, and `b` is the
# machine's: tens of cycles on one x86 part, a few on another (benches/IMPLEMENTATION.md,
# "What an atomic costs"). Which of the two counts to cut first depends on it.
set -euo pipefail
profile=${1:-scalable}
n=${2:-2000000}
rounds=${3:-7}
pad=${4:-16}
bin=target/release/atomiccost
[ -x "$bin" ] || { echo "build first: cargo build --release -p uproc-benches --bin atomiccost" >&2; exit 2; }
base=() padded=()
for _ in $(seq "$rounds"); do
  base+=("$("$bin" "$profile" "$n" 0 | awk '{print $(NF-4)}')")
  padded+=("$("$bin" "$profile" "$n" "$pad" | awk '{print $(NF-4)}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
m0=$(median "${base[@]}")
m1=$(median "${padded[@]}")
echo "profile=$profile n=$n rounds=$rounds pad=$pad"
echo "pad 0:    ${base[*]} ns per life cycle (median $m0)"
echo "pad $pad:   ${padded[*]} ns per life cycle (median $m1)"
awk -v a="$m0" -v b="$m1" -v p="$pad" 'BEGIN { printf "one atomic in the life cycle: %.2f ns (median difference / %d)\n", (b - a) / p, p }'
