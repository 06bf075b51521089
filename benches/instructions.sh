#!/usr/bin/env bash
# Instructions per life cycle, split by the object that ran them (callgrind, exact).
#
#   benches/instructions.sh BINARY ARGS...       e.g.
#   benches/instructions.sh target/release/spawncycles scalable tokio
#   benches/instructions.sh target/release/lifecycles scalable
#
# Runs `BINARY ARGS... N` under callgrind at N = 10000 and 20000 and prints, per object
# (the program, libc, ...), the instructions it executed per life cycle (the
# difference of the two runs over 10000: setup and teardown cancel), then the total.
#
# Why split: glibc's `malloc`/`free` path for tokio's 128-byte-aligned task cell
# depends on where the program's other allocations put the heap's free chunks, so a
# change that allocates differently once (at startup) can move the libc line by ~90
# instructions per life cycle either way, in a loop whose own code did not change
# (crates/uproc/IMPLEMENTATION.md, crates/pidns/IMPLEMENTATION.md "The chunk table").
# Compare the program's line across builds; read the libc line as that build's luck.
# A loop on a multi-threaded runtime (tokio) also varies by a few instructions between
# runs of one binary (the runtime's idle worker polls and parks at its own pace):
# differences under ~10 per life cycle there are noise.
set -euo pipefail
bin=${1:?usage: benches/instructions.sh BINARY ARGS...}
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for n in 10000 20000; do
  valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$out/cg.$n" "$bin" "$@" "$n" >/dev/null 2>&1
done
# Cost lines ("POSITION IR") count for the current `ob=`; the line after `calls=` is
# a call's inclusive cost and is skipped (the callee's own lines count it).
awk '
  FNR == 1 { run++ }
  /^ob=/ { ob = substr($0, 4); n = split(ob, parts, "/"); ob = parts[n]; next }
  /^calls=/ { skip = 1; next }
  skip { skip = 0; next }
  /^[0-9+*-]/ { c[run, ob] += $2; seen[ob] = 1 }
  END {
    for (o in seen) {
      d = (c[2, o] - c[1, o]) / 10000
      if (d >= 0.05 || d <= -0.05) { printf "%10.1f  %s\n", d, o; total += d }
    }
    printf "%10.1f  TOTAL instructions per life cycle\n", total
  }' "$out/cg.10000" "$out/cg.20000" | sort -n
