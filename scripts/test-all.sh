#!/usr/bin/env bash
# Installs what is missing, builds Hearth with warnings as errors, and runs every test:
# the CTest suites (unit, model, vulkan, cuda, gui, slow labels) and the GGUF fuzzer.
# Environment: HEARTH_TEST_DATA (default ../shared), HEARTH_FUZZ_SECONDS (default 60),
# HEARTH_JOBS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${HEARTH_JOBS:-$(nproc)}
export HEARTH_TEST_DATA=${HEARTH_TEST_DATA:-$(cd "$root/.." && pwd)/shared}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

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

stamp "openai npm client (the server's end-to-end test drives it)"
bash scripts/install-npm-openai.sh || echo "warning: openai npm client not installed; its test will be skipped"

stamp "configure + build (ci preset)"
cmake --preset ci -DHEARTH_TEST_DATA="$HEARTH_TEST_DATA" >/dev/null
cmake --build --preset ci -j "$jobs"

stamp "fuzz build (clang, ASan + UBSan)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target fuzz_gguf

stamp "fuzzing the GGUF reader for ${HEARTH_FUZZ_SECONDS:-60}s"
bash scripts/fuzz.sh "${HEARTH_FUZZ_SECONDS:-60}"

stamp "tests"
ctest --preset ci -j "$jobs" --output-on-failure

stamp "all tests passed"
