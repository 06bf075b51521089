#!/usr/bin/env bash
# Atomic read-modify-writes per life cycle, counted exactly (callgrind).
#
#   benches/atomics.sh BINARY ARGS...       e.g.
#   benches/atomics.sh target/release/spawncycles scalable tokio
#   benches/atomics.sh target/release/lifecycles scalable
#
# Runs `BINARY ARGS... N` under callgrind at N = 10000 and 20000 with per-instruction
# counts, finds every locked instruction of BINARY (`lock`-prefixed, or `xchg` with
# memory, which is locked implicitly) with objdump, and prints how often each ran per
# life cycle (the difference of the two runs over 10000: setup and teardown cancel),
# summed per function, then the total. Atomics in shared libraries (libc) are not
# counted.
#
# Why count them: each is a full barrier, and wall time per life cycle follows
# `instructions * a + atomics * b`, where `b` is the machine's: ~6 ns (~65
# instructions' worth) on the Intel part benches/IMPLEMENTATION.md ("What an atomic
# costs") measured, ~1.4 ns (~20 instructions' worth) on the AMD one of the README's
# run, where on another day removing four moved nothing measurable
# (crates/tasklist/IMPLEMENTATION.md). `benches/atomic-cost.sh` measures it on the
# machine at hand; count both.
set -euo pipefail
bin=${1:?usage: benches/atomics.sh BINARY ARGS...}
shift
abs=$(readlink -f "$bin")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for n in 10000 20000; do
  valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
    --callgrind-out-file="$out/cg.$n" "$bin" "$@" "$n" >/dev/null 2>&1
done
objdump -d --no-show-raw-insn "$abs" |
  awk '$1 ~ /^[0-9a-f]+:$/ && ($2 == "lock" || ($2 == "xchg" && $0 ~ /\(/)) {
         a = $1; sub(":", "", a); print "0x" a
       }' >"$out/locked"
# Cost lines: "0xADDR LINE IR"; the line after "calls=" is a call's inclusive cost.
awk -v target="$abs" '
  FILENAME ~ /locked$/ { locked[$1] = 1; next }
  FNR == 1 { run++ }
  /^ob=/ { ob = substr($0, 4); next }
  /^fn=/ { fn = substr($0, 4); next }
  /^calls=/ { skip = 1; next }
  skip { skip = 0; next }
  /^0x/ && ob == target && ($1 in locked) { c[run, $1] += $3; f[$1] = fn }
  END {
    for (a in f) {
      d = (c[2, a] - c[1, a]) / 10000
      if (d > 0.001) { per[f[a]] += d; total += d }
    }
    for (fn in per) printf "%8.2f  %s\n", per[fn], substr(fn, 1, 140)
    printf "%8.2f  TOTAL locked instructions per life cycle\n", total
  }' "$out/locked" "$out/cg.10000" "$out/cg.20000" | sort -n
