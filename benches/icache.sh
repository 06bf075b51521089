#!/usr/bin/env bash
# Instruction-cache footprint of one life cycle, counted exactly (valgrind).
#
#   benches/icache.sh BINARY ARGS...       e.g.
#   benches/icache.sh target/release/lifecycles scalable
#   benches/icache.sh target/release/spawncycles scalable tokio
#
# Runs `BINARY ARGS... N` and prints:
#
# 1. the hot code: the distinct 64-byte lines of machine code that every life cycle
#    runs (callgrind at N = 20000 with per-instruction counts; an instruction run at
#    least N/2 times is hot), per function (the 12 largest) and in all, with the hot
#    instructions in them;
# 2. L1 instruction-cache misses per life cycle: cachegrind simulating this machine's
#    caches at N = 10000 and 20000, the difference over 10000 (setup and teardown
#    cancel), and the I1 geometry it simulated.
#
# Why: wall time follows instructions (and atomics, `benches/atomics.sh`) only while
# the loop's code stays in the L1 instruction cache. Once the hot lines no longer fit
# (32 KiB, 8-way on the machines measured so far; fewer lines where many fall in the
# same set), every life cycle refetches code from L2, which neither instruction count
# shows (benches/IMPLEMENTATION.md, "Code that does not fit").
set -euo pipefail
bin=${1:?usage: benches/icache.sh BINARY ARGS...}
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
  --callgrind-out-file="$out/cg" "$bin" "$@" 20000 >/dev/null 2>&1
# Cost lines: "0xADDR LINE IR"; the line after "calls=" is a call's inclusive cost.
awk -v n=20000 '
  function hex(s,   v, i) {
    v = 0
    for (i = 3; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v
  }
  /^ob=/ { ob = substr($0, 4); next }
  /^fn=/ { fn = substr($0, 4); next }
  /^calls=/ { skip = 1; next }
  skip { skip = 0; next }
  /^0x/ { k = ob SUBSEP $1; c[k] += $3; f[k] = fn }
  END {
    for (k in c) {
      if (c[k] < n / 2) continue
      split(k, p, SUBSEP)
      line = p[1] SUBSEP int(hex(p[2]) / 64)
      if (!(line in owner)) { owner[line] = f[k]; lines[f[k]]++; total++ }
      instrs[f[k]]++; hot++
    }
    for (fn in lines)
      printf "%6d lines %6d instructions  %s\n", lines[fn], instrs[fn], substr(fn, 1, 110)
    printf "%6d lines %6d instructions  TOTAL hot code per life cycle (%.1f KiB)\n",
      total, hot, total * 64 / 1024
  }' "$out/cg" | sort -n | tail -13
for n in 10000 20000; do
  valgrind --tool=cachegrind --cache-sim=yes -v --cachegrind-out-file=/dev/null \
    "$bin" "$@" "$n" >"$out/cc.$n" 2>&1
done
geometry=$(sed -n 's/.*  I1: //p' "$out/cc.10000" | head -1)
miss() { grep 'I1  misses:' "$1" | tr -d ',' | awk '{print $NF}'; }
awk -v a="$(miss "$out/cc.10000")" -v b="$(miss "$out/cc.20000")" -v g="$geometry" \
  'BEGIN { printf "%8.1f  L1 instruction-cache misses per life cycle (simulated %s)\n", (b - a) / 10000, g }'
