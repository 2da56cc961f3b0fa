#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: builds Hearth's CUDA backend for this GPU's
# architecture (CMake's "native"), runs the CUDA tests (label cuda: the ops, graph replay, and
# tests/device's step graphs and engine on cuda:0, plus the host math), lists the devices, checks that the engine's greedy tokens on cuda:0 equal
# the CPU's on the shared stories260K, and benchmarks `hearth-cli bench --device cuda:0`.
# Environment: HEARTH_TEST_DATA (default ../shared), HEARTH_JOBS (default: all cores),
# HEARTH_CUDA_BUILD (default build/cuda-native), HEARTH_BENCH_MODEL (a GGUF for the bench; default:
# synthesized 1B models). HEARTH_CUDA_INT8=0 / HEARTH_CUDA_GRAPHS=0 switch those paths off.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${HEARTH_JOBS:-$(nproc)}
build=${HEARTH_CUDA_BUILD:-build/cuda-native}
export HEARTH_TEST_DATA=${HEARTH_TEST_DATA:-$(cd "$root/.." && pwd)/shared}

start=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - start ))s] $*"; }

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader || true
else
  echo "nvidia-smi not found: the cuda tests will report the missing driver and skip"
fi

stamp "configure ($build, CUDA architectures: native)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_CUDA=ON \
  -DHEARTH_CUDA_ARCHITECTURES=native -DHEARTH_WERROR=ON -DHEARTH_GUI=OFF -DHEARTH_VULKAN=OFF \
  -DHEARTH_TEST_DATA="$HEARTH_TEST_DATA" >/dev/null

stamp "build"
cmake --build "$build" -j"$jobs" --target tests_cuda tests_device hearth-cli

stamp "tests (label cuda: the ops, graphs, and every device's forward and engine checks; + host math)"
ctest --test-dir "$build" --output-on-failure -V -L cuda
ctest --test-dir "$build" --output-on-failure -V -R '^test_cuda_math$'

cli="$build/bin/hearth-cli"
[[ -x "$cli" ]] || cli=$(find "$build" -name hearth-cli -type f -perm -u+x -print -quit)
stamp "devices"
"$cli" devices || true
stories="$HEARTH_TEST_DATA/models/stories260K.gguf"
if [[ -f "$stories" ]]; then
  stamp "engine on cuda:0 vs the CPU (greedy ids, stories260K)"
  cpu_ids=$("$cli" run "$stories" -p "Once upon a time" -n 48 --temp 0 --print-ids --device cpu | tail -1)
  echo "cpu:  $cpu_ids"
  for ngl in -1 3; do
    gpu_ids=$("$cli" run "$stories" -p "Once upon a time" -n 48 --temp 0 --print-ids --device cuda:0 -ngl "$ngl" | tail -1)
    echo "cuda (-ngl $ngl): $gpu_ids"
    [[ "$cpu_ids" == "$gpu_ids" ]] || { echo "FAIL: greedy ids differ between cpu and cuda:0 -ngl $ngl"; exit 1; }
  done
fi
# The bench: a given model, or synthesized Llama 3.2 1B shapes in Q4_0 and Q4_K_M (prefill of
# quantized weights takes the int8 path, decode the graph replay), each also with the int8 prefill
# and the graphs switched off, so their effect is measured on this GPU.
models=()
if [[ -n "${HEARTH_BENCH_MODEL:-}" ]]; then
  models=("$HEARTH_BENCH_MODEL")
elif [[ -f "$HEARTH_TEST_DATA/models/ggml-vocab-llama-bpe.gguf" ]]; then
  for type in Q4_0 Q4_K_M; do
    f="$build/bench-llama3.2-1b-$type.gguf"
    if [[ ! -s "$f" ]]; then
      stamp "synthesizing $f"
      "$cli" synth --preset llama3.2-1b --type "$type" --vocab "$HEARTH_TEST_DATA/models/ggml-vocab-llama-bpe.gguf" \
        -o "$f.tmp" >/dev/null
      mv "$f.tmp" "$f"
    fi
    models+=("$f")
  done
fi
[[ ${#models[@]} -gt 0 ]] || { [[ -f "$stories" ]] && models=("$stories"); }
for model in "${models[@]}"; do
  stamp "bench ($model): cpu, then cuda:0 (default, without int8 prefill, without graphs)"
  "$cli" bench "$model" --device cpu --reps 2 -p 128 -n 32
  "$cli" bench "$model" --device cuda:0 --reps 3
  HEARTH_CUDA_INT8=0 "$cli" bench "$model" --device cuda:0 --reps 3
  HEARTH_CUDA_GRAPHS=0 "$cli" bench "$model" --device cuda:0 --reps 3
done
[[ ${#models[@]} -gt 0 ]] || echo "no model for the bench: set HEARTH_BENCH_MODEL=/path/to/model.gguf"
stamp "done"
