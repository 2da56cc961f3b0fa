#!/usr/bin/env bash
# Builds ref_mtmd_embed, ref_mtmd_logits and ref_mtmd_preprocess (tests/tools/): llama.cpp's mtmd compiled from the
# reference's source bundle, linked against its prebuilt libraries, into OUT (default
# $HEARTH_REF/mtmd). Idempotent: objects are kept, so a second run only links if the tool changed.
# Usage: build_ref_mtmd.sh [REF_DIR] [OUT_DIR]; prints ref_mtmd_embed's path on its last line
# (the others beside it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ref=${1:-${HEARTH_REF:-$HOME/.cache/hearth-ref}}
out=${2:-$ref/mtmd}
S=$ref/llama.cpp-src
B=$ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[[ -f $S/tools/mtmd/mtmd.cpp && -f $B/libllama.v0.5.0.so ]] || { echo "no reference at $ref (run shared/tools/reference/setup.sh)" >&2; exit 2; }
mkdir -p "$out/obj"
flags=(-O1 -std=c++17 -pthread -fPIC -DNDEBUG -DLLAMA_SHARED -DGGML_SHARED -DMTMD_VIDEO -w
       -I"$S/include" -I"$S/ggml/include" -I"$S/common" -I"$S/vendor" -I"$S/vendor/hash" -I"$S/tools/mtmd")
sources=("$S"/tools/mtmd/{mtmd,mtmd-audio,mtmd-image,mtmd-helper,mtmd-helper-gen,clip}.cpp "$S"/tools/mtmd/models/*.cpp
         "$S"/vendor/hash/hash.cpp)
todo=()
for src in "${sources[@]}"; do
  obj=$out/obj/$(basename "$(dirname "$src")")_$(basename "$src" .cpp).o
  [[ -f $obj && $obj -nt $src ]] || todo+=("$src")
done
if ((${#todo[@]})); then
  printf '%s\n' "${todo[@]}" | xargs -P "$(nproc)" -I{} sh -c \
    'g++ "$@" -c "{}" -o "'"$out"'/obj/$(basename "$(dirname "{}")")_$(basename "{}" .cpp).o"' sh "${flags[@]}"
fi
# The hash helpers as llama.cpp's own build compiles them: xxhash and sha256 as C, sha1 as C++.
cflags=(-O2 -pthread -fPIC -w -I"$S/vendor/hash")
[[ -f $out/obj/hash_xxhash.o ]] || gcc "${cflags[@]}" -c "$S/vendor/hash/xxhash/xxhash.c" -o "$out/obj/hash_xxhash.o"
[[ -f $out/obj/hash_sha256.o ]] || gcc "${cflags[@]}" -c "$S/vendor/hash/sha256/sha256.c" -o "$out/obj/hash_sha256.o"
[[ -f $out/obj/hash_sha1.o ]] || g++ "${cflags[@]}" -x c++ -c "$S/vendor/hash/sha1/sha1.c" -o "$out/obj/hash_sha1.o"
for name in ref_mtmd_logits ref_mtmd_preprocess ref_mtmd_embed; do
  tool=$out/$name
  if [[ ! -x $tool || $here/$name.cpp -nt $tool ]]; then
    g++ "${flags[@]}" "$here/$name.cpp" "$out"/obj/*.o -o "$tool" \
      "$B/libllama-common.so" "$B/libllama.v0.5.0.so" "$B/libggml.v0.5.0.so" "$B/libggml-base.so" -Wl,-rpath,"$B"
  fi
done
# ggml finds its CPU variants beside the executable.
for f in "$B"/libggml-cpu-*.so; do ln -sfn "$f" "$out/"; done
echo "$tool"
