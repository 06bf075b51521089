#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds (default 60) on its committed corpus and
# prints a table: target, executions, executions/s, coverage, crashes.
#
#   fuzz/run-all.sh 60            # every target
#   fuzz/run-all.sh 10 lifecycle  # some targets
#
# New inputs go to a scratch copy of each corpus (the committed corpus stays as it is:
# minimise before adding seeds, see README.md). A crash leaves its input under
# fuzz/artifacts/<target>/ and counts in the table; the script then exits 1.
# Coverage is libFuzzer's `cov:` (edges reached) at the end of the run.
set -uo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
# Installed first: listing the targets needs cargo-fuzz too.
bash ./install.sh >/dev/null
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "run-all.sh: no fuzz targets found (cargo +nightly fuzz list)" >&2
  exit 1
fi
# One build of every target (cargo fuzz build takes at most one target name).
cargo +nightly fuzz build -O -s none >/dev/null 2>&1 || {
  cargo +nightly fuzz build -O -s none
  exit 1
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rows=()
failed=0
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t" "artifacts/$t"
  cp corpus/"$t"/* "$scratch/$t/" 2>/dev/null || true
  # In chunks of at most 10 s: every input builds and drops whole runtimes; a fresh
  # process per chunk bounds what one process can gather and keeps the fuzzer far
  # from its RSS limit. The corpus carries over between chunks.
  execs=0; cov=0; crashes=0; left=$secs
  found_before=$(find "artifacts/$t" -type f | wc -l)
  while [ "$left" -gt 0 ] && [ "$crashes" -eq 0 ]; do
    chunk=$(( left < 10 ? left : 10 )); left=$(( left - chunk ))
    log="$scratch/$t.log"
    cargo +nightly fuzz run -O -s none "$t" "$scratch/$t" -- \
      -max_total_time="$chunk" -max_len=512 -timeout=10 -rss_limit_mb=4096 \
      -print_final_stats=1 >"$log" 2>&1
    rc=$?
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    execs=$(( execs + ${n:-0} ))
    c=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    [ "${c:-0}" -gt "$cov" ] && cov=$c
    # A crash, leak, timeout or OOM leaves its input in artifacts/<target>/.
    crashes=$(( $(find "artifacts/$t" -type f | wc -l) - found_before ))
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
    if [ "$crashes" -ne 0 ]; then
      failed=1
      grep -m3 -E 'panicked at|diverges|ERROR' "$log" >&2
    fi
  done
  rate=$(( ${execs:-0} / secs ))
  rows+=("$(printf '| %-14s | %10s | %8s | %8s | %7s |' "$t" "${execs:-?}" "$rate" "${cov:-?}" "$crashes")")
done
printf '| %-14s | %10s | %8s | %8s | %7s |\n' target execs execs/s coverage crashes
printf '|%s|%s|%s|%s|%s|\n' ---------------- ------------ ---------- ---------- ---------
printf '%s\n' "${rows[@]}"
exit $failed
