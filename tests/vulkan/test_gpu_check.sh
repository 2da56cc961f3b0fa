#!/usr/bin/env bash
# scripts/gpu-check.sh on its lavapipe path, small: the tables it writes hold a selftest row with no
# failures, a greedy row, and a speed row with our figures (and llama.cpp's where the reference is
# set up); an unknown option is refused. Exit 77 (a skip) without a Vulkan device.
# Usage: test_gpu_check.sh BIN_DIR (holding hearth-cli) OUT_DIR (kept between runs: the script's
# synthesized file and its build of the reference client are reused)
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${HEARTH_TEST_DATA:-$root/../shared}
out=$2
mkdir -p "$out" && rm -f "$out/gpu-check.md"
fail() { echo "FAIL: $*" >&2; sed 's/^/  | /' "$out/gpu-check.md" >&2 2>/dev/null || true; exit 1; }

if bash "$root/scripts/gpu-check.sh" --bogus >/dev/null 2>&1; then fail "an unknown option was accepted"; fi
[ -f "$data/models/stories260K.gguf" ] || { echo "SKIP: no test data at $data"; exit 77; }

rc=0
OUT=$out HEARTH_BIN=$bin HEARTH_TEST_DATA=$data QUICK=1 PAIRS=1 PRESETS=llama-tiny PP=32 TG=8 STREAMS=2 STREAM_PROMPT=16 STREAM_GEN=8 \
  BENCH_FILES=$data/models/stories260K.gguf bash "$root/scripts/gpu-check.sh" >"$out/log" 2>&1 || rc=$?
if [ "$rc" = 1 ] && grep -q 'No GPU device' "$out/gpu-check.md"; then echo "SKIP: no Vulkan device"; exit 77; fi
[ "$rc" = 0 ] || { cat "$out/log" >&2; fail "gpu-check.sh exited $rc"; }
md=$out/gpu-check.md
grep -Eq '^\| vulkan:0 \| [0-9]+ \| 0 \| ' "$md" || fail "no selftest row for vulkan:0 with 0 failed"
row=$(grep -E '^\| llama-tiny \|' "$md") || fail "no greedy row for llama-tiny"
case $row in *DIFFERS*|*"no output"*) fail "llama-tiny's greedy row: $row" ;; esac
speed=$(grep -E '^\| stories260K.gguf \| vulkan:0 \|' "$md") || fail "no speed row"
echo "$speed" | grep -Eq '^\| stories260K.gguf \| vulkan:0 \| [0-9.]+ ' || fail "no prompt figure: $speed"
if [ -x "${HEARTH_REF:-$HOME/.cache/hearth-ref}/ref-llama-bench" ]; then
  case $row in *"(no reference)"*) fail "the reference is set up but the greedy row has none: $row" ;; esac
  echo "$speed" | grep -q ' = \*\*' || fail "the reference is set up but the speed row has no ratio: $speed"
fi
echo "PASS"; sed 's/^/  | /' "$md"
