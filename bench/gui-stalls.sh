#!/usr/bin/env bash
# The GUI thread's stalls while the app downloads a starter, loads it and answers (the heartbeat of
# tests_gui test_first_run) and while the main window loads and generates (test_app_window), over
# R runs: median, min and max of each figure. Figures only: the tests assert no more than that
# nothing blocks the GUI thread for a second.
# usage: bench/gui-stalls.sh [BUILD_DIR (default build/ci)] [RUNS (default 5)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
runs=${2:-5}
export HEARTH_TEST_DATA=${HEARTH_TEST_DATA:-$(cd .. && pwd)/shared}
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
exe="$build/bin/tests_gui"
[[ -x "$exe" ]] || { echo "gui-stalls: $exe not built" >&2; exit 2; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) threads; $runs runs"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((i = 0; i < runs; ++i)); do
  "$exe" test_first_run welcomeDownloadsLoadsAndChats 2>&1 | grep -o '99th percentile [0-9.]* ms, longest [0-9.]* ms' |
    awk '{print "first_run_p99", $3; print "first_run_longest", $6}' >>"$out" || true
  "$exe" test_app_window 2>&1 | grep -o 'longest GUI-thread gap during load and generation: [0-9]* ms' |
    awk '{print "app_window_longest", $(NF-1)}' >>"$out" || true
done
awk '{v[$1] = v[$1] " " $2} END {for (k in v) print k, v[k]}' "$out" | sort | while read -r name values; do
  echo "$values" | tr ' ' '\n' | grep -v '^$' | sort -g |
    awk -v n="$name" '{a[NR] = $1} END {printf "%-20s median %6.1f ms  min %6.1f  max %6.1f  (%d runs)\n", n, a[int((NR + 1) / 2)], a[1], a[NR], NR}'
done
