#!/usr/bin/env bash
# Installs what is missing, builds Hearth with warnings as errors, and runs every test:
# the CTest suites (unit, model, vulkan, cuda, gui, slow labels) and the GGUF fuzzer.
# Environment: HEARTH_TEST_DATA (default ../shared), HEARTH_FUZZ_SECONDS (default 60),
# HEARTH_JOBS (default: all cores).
# `--as-avx2` runs the tests as an AVX2-only machine would (the slowest we support): the CPU
# kernels at their AVX2 level (HEARTH_CPU_ISA=avx2) and lavapipe at 256 bits.
set -euo pipefail
if [[ "${1:-}" == "--as-avx2" ]]; then
  export HEARTH_CPU_ISA=avx2 LP_NATIVE_VECTOR_WIDTH=256
  shift
fi
(( $# == 0 )) || { echo "usage: $0 [--as-avx2]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${HEARTH_JOBS:-$(nproc)}
export HEARTH_TEST_DATA=${HEARTH_TEST_DATA:-$(cd "$root/.." && pwd)/shared}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths inside this checkout hash relative to it, so that a clone in another folder can reuse the
# cache (unity batches, which include their sources by absolute path, still compile again).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

start=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - start ))s] $*"; }

stamp "dependencies"
bash scripts/install-deps.sh

stamp "reference engine (llama.cpp from npm: the tests' oracle)"
if [[ -x "$HEARTH_TEST_DATA/tools/reference/setup.sh" ]]; then
  export HEARTH_REF=${HEARTH_REF:-$HOME/.cache/hearth-ref}
  bash "$HEARTH_TEST_DATA/tools/reference/setup.sh" >/dev/null ||
    echo "warning: reference setup failed; tests that need it will say they are skipped"
fi

stamp "npm API clients and a JSON Schema validator (the server's end-to-end tests drive them)"
bash scripts/install-npm-clients.sh || echo "warning: npm clients not installed; their tests will be skipped"

stamp "configure + build (ci preset)"
build_start=$(date +%s)
cmake --preset ci -DHEARTH_TEST_DATA="$HEARTH_TEST_DATA" >/dev/null
cmake --build --preset ci -j "$jobs"
build_seconds=$(( $(date +%s) - build_start ))

stamp "fuzz build (clang, ASan + UBSan)"
fuzz_build_start=$(date +%s)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target fuzz_gguf fuzz_requests
fuzz_build_seconds=$(( $(date +%s) - fuzz_build_start ))

# The two fuzzers run side by side (each is one process on one core), their outputs shown after.
stamp "fuzzing the GGUF reader, and the request parsers and grammars, for ${HEARTH_FUZZ_SECONDS:-60}s"
mkdir -p build/fuzz
bash scripts/fuzz.sh "${HEARTH_FUZZ_SECONDS:-60}" >build/fuzz/gguf.log 2>&1 &
gguf_pid=$!
bash scripts/fuzz-requests.sh "${HEARTH_FUZZ_SECONDS:-60}" >build/fuzz/requests.log 2>&1 &
requests_pid=$!
fuzz_rc=0
wait "$gguf_pid" || fuzz_rc=1
wait "$requests_pid" || fuzz_rc=1
echo "-- GGUF reader:"; cat build/fuzz/gguf.log
echo "-- request parsers and grammars:"; cat build/fuzz/requests.log
(( fuzz_rc == 0 )) || { stamp "fuzzing FAILED"; exit 1; }

stamp "tests"
log=build/ci/ctest-output.log
tests_start=$(date +%s)
set +e
ctest --preset ci -j "$jobs" --output-on-failure 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
tests_seconds=$(( $(date +%s) - tests_start ))

# Counts: executables passed / skipped (every function skipped: exit 77) / failed, and the test
# functions skipped inside executables that passed (their "hearth-test: N passed, M skipped" line).
passed=$(grep -cE 'Test +#[0-9]+: .* Passed' "$log" || true)
skipped=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$log" || true)
failed=$(grep -cE 'Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Not Run)' "$log" || true)
partial=0
if [[ -f build/ci/Testing/Temporary/LastTest.log ]]; then
  # (no such line at all is a count of 0, not a grep failure under pipefail)
  partial=$({ grep -oE '^hearth-test: [0-9]+ passed, [0-9]+ skipped' build/ci/Testing/Temporary/LastTest.log || true; } |
            awk '{s += $4} END {print s + 0}')
fi
echo "== tests: $passed passed, $skipped skipped, $failed failed; $partial test functions skipped inside passing tests"
if (( skipped > 0 )); then
  echo "== skipped:"
  grep -E 'Test +#[0-9]+: .*\*\*\*Skipped' "$log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+).*/   \1/'
fi
# The slowest ten tests, so that a slow one is seen when it lands; the time of each stage. (awk reads
# every line and keeps ten: `head` would close the pipe early and, under pipefail, sort's SIGPIPE
# would fail the run.)
echo "== slowest tests:"
grep -E 'Test +#[0-9]+: ' "$log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' | sort -rn |
  awk 'NR <= 10 {printf "   %8.1f s  %s\n", $1, $2}'
# The slowest ten test functions (each executable names its three slowest; see tests/common/test_main.h).
if [[ -f build/ci/Testing/Temporary/LastTest.log ]]; then
  echo "== slowest test functions:"
  grep -hoE '^hearth-test: function [0-9.]+ s .*' build/ci/Testing/Temporary/LastTest.log | awk '{print $3, $5}' |
    sort -rn | awk 'NR <= 10 {printf "   %8.1f s  %s\n", $1, $2}'
fi
echo "== times: build ${build_seconds}s, fuzz build ${fuzz_build_seconds}s, tests ${tests_seconds}s, all $(( $(date +%s) - start ))s"
(( rc == 0 )) || { stamp "tests FAILED"; exit "$rc"; }
stamp "all tests passed"
