#!/usr/bin/env bash
# Tokenizer speed beside llama.cpp's: 1 MiB of English text, each vocabulary, A B A B,
# best of 3 encodes per run; prints both times, the token counts and the ratio.
# usage: bench/tokenizer.sh [BUILD_DIR]   (needs the reference set up: ../shared/tools/reference/setup.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
data=${HEARTH_TEST_DATA:-$root/../shared}
ref=${HEARTH_REF:-$HOME/.cache/hearth-ref}
bin=$build/bin/bench_tokenizer
[ -x "$bin" ] || { echo "build bench_tokenizer first (cmake --build $build --target bench_tokenizer)"; exit 2; }
text=$(mktemp)
trap 'rm -f "$text"' EXIT
# English prose: the shared docs, repeated to 1 MiB.
while [ "$(stat -c %s "$text")" -lt 1048576 ]; do cat "$data"/docs/*.md "$root"/README.md >> "$text"; done
head -c 1048576 "$text" > "$text.1m" && mv "$text.1m" "$text"
printf '%-28s %10s %10s %9s %9s %7s\n' vocab hearth_ms llama_ms hearth_n llama_n ratio
# The shared vocabularies, then those that ship with llama.cpp's source (qwen35, gemma-4) when
# the reference has it.
for v in llama-spm llama-bpe qwen2 qwen35 gemma-4; do
  f=$data/models/ggml-vocab-$v.gguf
  [ -f "$f" ] || f=$ref/llama.cpp-src/models/ggml-vocab-$v.gguf
  [ -f "$f" ] || { echo "$v: no vocab file, skipped"; continue; }
  best_h=1e30 best_r=1e30
  for round in 1 2; do
    read -r h hn < <("$bin" "$f" "$text" 3)
    read -r r rn < <(REF_HARNESS=$ref node "$root/bench/ref_tokenizer_time.mjs" "$f" "$text" 3)
    best_h=$(awk -v a="$best_h" -v b="$h" 'BEGIN{print (b<a)?b:a}')
    best_r=$(awk -v a="$best_r" -v b="$r" 'BEGIN{print (b<a)?b:a}')
  done
  printf '%-28s %10s %10s %9s %9s %6.2fx\n' "$v" "$best_h" "$best_r" "$hn" "$rn" \
    "$(awk -v a="$best_r" -v b="$best_h" 'BEGIN{print a/b}')"
done
echo "ratio = llama.cpp time / hearth time (above 1: hearth is faster)"
