#!/usr/bin/env bash
# The GPU check in one command: on every GPU device hearth-cli finds (Vulkan, CUDA; on a machine
# without one, Mesa's lavapipe is the Vulkan device), the op self-test against the reference, the
# greedy continuation of every architecture's tiny model against llama.cpp's, and prompt,
# generation and 16-stream speed side by side with llama.cpp's GPU build (A B A B, medians), and
# the MoE files' speed with their experts in RAM against llama.cpp's --n-cpu-moe.
# Writes $OUT/gpu-check.md (the tables) and the raw JSON beside it.
#
#   scripts/gpu-check.sh                  run here (builds build/release if hearth-cli is missing)
#   scripts/gpu-check.sh --make-kit DIR   here: pack into DIR what a bare GPU machine lacks
#                                         (hearth-cli with its shared libraries, llama.cpp's
#                                         Vulkan build with our client of it and its source,
#                                         the vocabulary; also packed as DIR.tar.xz; with
#                                         LLAMA_CUDA_DIR, DIR-cuda(.tar.xz) too: hearth-cli with
#                                         that CUDA build of llama.cpp and a client of it)
#   scripts/gpu-check.sh --kit DIR        there: run with the kit instead of a build
#
# Environment: OUT (default /tmp/hearth-gpu-check), HEARTH_TEST_DATA (../shared), HEARTH_REF
# (~/.cache/hearth-ref), HEARTH_BIN (a folder with hearth-cli), DEVICES (default: every GPU
# device), PRESETS (the greedy rows; default every generating tiny preset), PAIRS (2), PP (512),
# TG (128), STREAMS (16, each STREAM_PROMPT 128 + STREAM_GEN 64 tokens), BENCH_FILES (GGUF paths;
# default: synthesized dense, MoE and hybrid files of real shapes), QUICK=1 (tiny files and sizes:
# the CPU/lavapipe path), LLAMA_CUDA_DIR (a folder with a CUDA build of llama.cpp's libraries, to
# compare cuda:N devices with), LLAMA_CUDA=1 (build that from the reference's source first: several
# minutes on 16 cores; LLAMA_CUDA_ARCH, default native), STEP_TIMEOUT (seconds any one run may take
# before it is stopped and reported as failed; default 300), SELFTEST=0 (skip the op self-test).
#
# On a lent GPU machine (no Qt, no reference, no network there): make the kit here inside the
# checkout, in a folder .git/info/exclude ignores, carry it, and run `bash KIT/gpu-check.sh --kit KIT`
# (with the Vulkan loader unpacked there if the machine lacks one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/hearth-gpu-check}
data=${HEARTH_TEST_DATA:-$(cd "$root/.." && pwd)/shared}
ref=${HEARTH_REF:-$HOME/.cache/hearth-ref}
kit=
clientSrc=$root/bench/ref_gpu_bench.cpp
say() { echo "== $*" >&2; }
# Every run of ours or llama.cpp's goes through this: a hung kernel costs one cell, not the check.
T() { timeout -k 5 "${STEP_TIMEOUT:-300}" "$@"; }
die() { echo "gpu-check: $*" >&2; exit 2; }

refLibs() { # the reference's Vulkan build (it holds the CPU variants too)
  echo "$ref/node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan"
}
buildRefClient() { # $1 output binary, $2 library folder (libllama*.so, libggml*.so), [$3 source root]
  # [$4 the run-time library path; default: $2, then lib/ beside the binary]
  local src=${3:-$ref/llama.cpp-src} libs
  libs=$(ls "$2"/libllama*.so "$2"/libggml.*so "$2"/libggml-base.so 2>/dev/null | sort -u)
  # shellcheck disable=SC2086 # one library per word
  g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$clientSrc" -o "$1" \
    $libs -Wl,-rpath,"${4:-$2:\$ORIGIN/lib}" -Wl,--allow-shlib-undefined # a CUDA build needs the driver only at run time
}

case ${1:-} in
--make-kit)
  dir=${2:?usage: gpu-check.sh --make-kit DIR}
  [ -d "$(refLibs)" ] || die "no reference at $ref (run $data/tools/reference/setup.sh)"
  if [ ! -x "$root/build/release/bin/hearth-cli" ]; then
    say "building hearth-cli (release)"
    (cd "$root" && cmake --preset release >/dev/null && cmake --build build/release --target hearth-cli)
  fi
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/ref/lib" "$dir/data"
  cp "$root/build/release/bin/hearth-cli" "$dir/bin/" && strip "$dir/bin/hearth-cli"
  # Every shared library but the C library's own: the GPU machine's system is not Debian's.
  ldd "$root/build/release/bin/hearth-cli" | awk '$3 ~ /^\// {print $3}' |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
    while read -r l; do cp -L "$l" "$dir/lib/"; done
  cp -L "$(refLibs)"/lib*.so "$dir/ref/lib/"
  rm -f "$dir"/ref/lib/libggml-cpu-{sandybridge,ivybridge,piledriver,sse42,x64,cannonlake,cascadelake,cooperlake,icelake,skylakex}.so
  buildRefClient "$dir/ref/ref-gpu-bench" "$(refLibs)"
  cp "$data/models/ggml-vocab-llama-spm.gguf" "$dir/data/"
  # The Vulkan loader (hearth-cli opens libvulkan.so.1 at run time; a bare machine may lack it) and
  # the reference's source, from which LLAMA_CUDA=1 builds llama.cpp's CUDA libraries there.
  l=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')
  [ -n "$l" ] && cp -L "$l" "$dir/lib/"
  (cd "$ref/llama.cpp-src" && tar -cJf "$dir/ref/llama-src.tar.xz" CMakeLists.txt cmake ggml src include common vendor)
  cp "$0" "$dir/"
  cp "$clientSrc" "$dir/ref/"
  tar -C "$(dirname "$dir")" -cJf "$dir.tar.xz" "$(basename "$dir")"
  say "kit: $dir ($(du -sh "$dir" | cut -f1)), packed as $dir.tar.xz ($(du -sh "$dir.tar.xz" | cut -f1))"
  # A CUDA build of llama.cpp's libraries made here (LLAMA_CUDA_DIR; its CUDA runtime libraries are
  # the GPU machine's own) goes with its client and hearth-cli into a second kit, DIR-cuda: ~60 MB
  # packed, mostly GPU code that does not compress, so each kit fits a transfer of 64 MB alone.
  if [ -n "${LLAMA_CUDA_DIR:-}" ]; then
    c=$dir-cuda
    rm -rf "$c" && mkdir -p "$c/ref/cuda"
    cp -a "$dir/bin" "$dir/lib" "$dir/data" "$dir/gpu-check.sh" "$c/"
    cp -P "$LLAMA_CUDA_DIR"/lib*.so* "$c/ref/cuda/"
    buildRefClient "$c/ref/ref-gpu-bench-cuda" "$LLAMA_CUDA_DIR" "" '$ORIGIN/cuda'
    tar -C "$(dirname "$c")" -cJf "$c.tar.xz" "$(basename "$c")"
    say "CUDA kit: $c, packed as $c.tar.xz ($(du -sh "$c.tar.xz" | cut -f1)); there: --kit $(basename "$c")"
  fi
  exit 0 ;;
--kit) kit=$(cd "${2:?usage: gpu-check.sh --kit DIR}" && pwd) ;;
"") ;;
*) die "unknown option '$1' (see the comment at the top of this script)" ;;
esac

mkdir -p "$out/work"
work=$out/work
if [ -n "$kit" ]; then
  bin=$kit/bin
  export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  refBench=$kit/ref/ref-gpu-bench
  refVulkan=$kit/ref/lib
  vocab=$kit/data/ggml-vocab-llama-spm.gguf
  refSrc=$kit/ref/llama-src.tar.xz
  clientSrc=$kit/ref/ref_gpu_bench.cpp
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  if [ -x "$kit/ref/ref-gpu-bench-cuda" ] && [ -z "${LLAMA_CUDA_DIR:-}" ]; then LLAMA_CUDA_DIR=$kit/ref/cuda; fi
else
  bin=${HEARTH_BIN:-$root/build/release/bin}
  if [ ! -x "$bin/hearth-cli" ]; then
    say "building hearth-cli (release)"
    (cd "$root" && cmake --preset release >/dev/null && cmake --build build/release --target hearth-cli)
    bin=$root/build/release/bin
  fi
  vocab=$data/models/ggml-vocab-llama-spm.gguf
  refVulkan=$(refLibs)
  refBench=$work/ref-gpu-bench
  refSrc=$ref/llama.cpp-src
  if [ -d "$refVulkan" ] && [ ! -x "$refBench" -o "$clientSrc" -nt "$refBench" ]; then
    say "building the reference client"
    buildRefClient "$refBench" "$refVulkan"
  fi
fi
cli=$bin/hearth-cli
[ -x "$cli" ] || die "no hearth-cli in $bin"
[ -f "$vocab" ] || die "no vocabulary at $vocab (HEARTH_TEST_DATA)"
haveRef=0; [ -x "$refBench" ] && haveRef=1
refCudaBench=
sourceDir() { # the reference's source folder (the kit's tarball unpacked once)
  if [ -f "$refSrc" ]; then
    [ -d "$work/llama-src/ggml" ] || { mkdir -p "$work/llama-src" && tar -C "$work/llama-src" -xJf "$refSrc"; }
    echo "$work/llama-src"
  else echo "$refSrc"; fi
}
if [ "${LLAMA_CUDA:-0}" = 1 ] && [ -z "${LLAMA_CUDA_DIR:-}" ]; then
  say "building llama.cpp's CUDA libraries from the reference's source"
  src=$(sourceDir); b=$work/llama-cuda
  if cmake -S "$src" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES="${LLAMA_CUDA_ARCH:-native}" -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
       -DGGML_BACKEND_DL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
       -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF >"$work/llama-cuda.log" 2>&1 &&
     cmake --build "$b" --target llama -j "$(nproc)" >>"$work/llama-cuda.log" 2>&1; then
    mkdir -p "$b/lib" && find "$b" -name 'lib*.so*' ! -path "$b/lib/*" -exec cp -P {} "$b/lib/" \;
    LLAMA_CUDA_DIR=$b/lib
  else
    say "llama.cpp's CUDA build failed: see $work/llama-cuda.log"
  fi
fi
if [ -n "$kit" ] && [ "${LLAMA_CUDA_DIR:-}" = "$kit/ref/cuda" ]; then
  refCudaBench=$kit/ref/ref-gpu-bench-cuda
elif [ -n "${LLAMA_CUDA_DIR:-}" ]; then
  refCudaBench=$work/ref-gpu-bench-cuda
  buildRefClient "$refCudaBench" "$LLAMA_CUDA_DIR" "$(sourceDir)" 2>>"$work/ref.log" || refCudaBench=
fi
quick=${QUICK:-0}
pairs=${PAIRS:-2}
sp=${STREAM_PROMPT:-128}; sg=${STREAM_GEN:-64}
if [ "$quick" = 1 ]; then pp=${PP:-64}; tg=${TG:-16}; streams=${STREAMS:-4}; else pp=${PP:-512}; tg=${TG:-128}; streams=${STREAMS:-16}; fi
md=$out/gpu-check.md
: >"$md"
note() { echo "$*" | tee -a "$md"; }

# ---- devices --------------------------------------------------------------------------------
"$cli" devices --json >"$out/devices.json"
if [ -n "${DEVICES:-}" ]; then devices=$DEVICES
else devices=$(python3 -c 'import json,sys; print(" ".join(d["id"] for d in json.load(open(sys.argv[1]))["devices"] if d["kind"] != "cpu"))' "$out/devices.json")
fi
note "# Hearth GPU check — $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'kit')"
note ""
note "Host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) threads. Devices:"
python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
for d in j["devices"]:
    print("- %s: %s (%.1f GiB, %s)" % (d["id"], d["name"], d["total_memory"] / 2**30, d["type"]))
for n in j.get("notes", []): print("- note: " + n)' "$out/devices.json" | tee -a "$md"
[ -n "$devices" ] || { note ""; note "No GPU device: nothing to check."; exit 1; }
[ "$haveRef" = 1 ] || note "- no reference (HEARTH_REF or the kit): the llama.cpp columns are left out"
[ -n "$refCudaBench" ] || note "- llama.cpp's CUDA build: none (LLAMA_CUDA_DIR or LLAMA_CUDA=1); cuda devices are compared with nothing"

# For one of our device ids: the visibility variable, client and library folder of llama.cpp's build.
refFor() {
  case $1 in
  vulkan:*) [ "$haveRef" = 1 ] && echo "GGML_VK_VISIBLE_DEVICES=${1#vulkan:} $refBench $refVulkan" ;;
  cuda:*) [ -n "$refCudaBench" ] && echo "CUDA_VISIBLE_DEVICES=${1#cuda:} $refCudaBench $LLAMA_CUDA_DIR" ;;
  esac
  return 0
}
runRef() { # DEVICE ARGS...: ref-gpu-bench on the llama.cpp build matching DEVICE
  local spec var client dir
  spec=$(refFor "$1"); shift
  [ -n "$spec" ] || return 1
  read -r var client dir <<<"$spec"
  local rc=0
  # The build's libraries find each other there (a client's own run path does not reach them).
  T env "$var" LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$client" --backend-dir "$dir" "$@" \
    2>>"$work/ref.log" || rc=$?
  [ "$rc" -lt 128 ] || echo "ref-gpu-bench $*: ended by signal $((rc - 128))" >>"$work/ref.log"
  return "$rc"
}
field() { # a dotted path into the JSON on stdin (list items by index); lists print space-separated
  python3 -c 'import json, sys
try: v = json.loads(sys.stdin.read() or "{}")
except ValueError: v = {}
for p in sys.argv[1].split("."):
    if isinstance(v, dict): v = v.get(p)
    elif isinstance(v, list) and p.isdigit() and int(p) < len(v): v = v[int(p)]
    else: v = None
print("" if v is None else " ".join(map(str, v)) if isinstance(v, list) else v)' "$1"; }

# ---- selftest -------------------------------------------------------------------------------
note ""
note "## Ops against the reference (hearth-cli selftest)"
note ""
note "| device | ok | failed | unsupported (falls back to the CPU) | seconds |"
note "|---|---|---|---|---|"
for d in $devices; do
  [ "${SELFTEST:-1}" = 1 ] || { note "| $d | (SELFTEST=0: not run) | | | |"; continue; }
  say "selftest $d"
  t0=$(date +%s)
  T "$cli" selftest --device "$d" --json >"$out/selftest-${d/:/-}.json" 2>"$work/selftest-${d/:/-}.log" || true
  python3 -c 'import json,sys,collections
j = json.load(open(sys.argv[1])); ops = j["ops"]
name = lambda o: (o["op"] + " " + str(o.get("type") or "")).strip()
ok = sum(1 for o in ops if o["supported"] and o["ok"])
bad = [name(o) for o in ops if o["supported"] and not o["ok"]]
un = collections.Counter(name(o) for o in ops if not o["supported"])
uns = ", ".join("%s x%d" % kv for kv in sorted(un.items())) or "none"
failed = str(len(bad)) + (" (" + ", ".join(bad[:6]) + ")" if bad else "")
print("| %s | %d | %s | %d: %s | %s |" % (sys.argv[2], ok, failed, sum(un.values()), uns, sys.argv[3]))' \
    "$out/selftest-${d/:/-}.json" "$d" "$(( $(date +%s) - t0 ))" 2>>"$work/selftest-${d/:/-}.log" | tee -a "$md" ||
    note "| $d | selftest did not finish: see $work/selftest-${d/:/-}.log | | | |"
done

# ---- greedy rows ----------------------------------------------------------------------------
presets=${PRESETS:-$("$cli" synth --list | awk '$1 ~ /-tiny$/ && $1 !~ /bert/ {print $1}')}
prompt="Once upon a time there was a little robot who"
steps=24
note ""
note "## Greedy continuation, $steps tokens of each architecture's tiny model (Q8_0), against llama.cpp on the CPU"
note ""
note "Where a run parts from llama.cpp: the step, the gap between the run's logits of its token and of"
note "llama.cpp's there, and llama.cpp's own top-2 gap; within 2e-2 (the logit tolerance) that is a"
note "near-tie, which summation order breaks either way. DIFFERS is a finding. Each GPU is also held to"
note "Hearth's fp32 reference device (\"ref\", what Vulkan's shaders compute); Hearth's CPU multiplies int8"
note "activations, as llama.cpp's CPU does, so it parts from the fp32 runs earliest, and so does CUDA's"
note "prefill of quantized weights (int8 activations too): there a \"ref\" gap a little over 2e-2 is expected."
note ""
note "| preset | llama.cpp (CPU) | hearth cpu | hearth ref (fp32) | $(echo $devices | sed 's/ / | /g') |"
note "|---|---|---|---|$(for d in $devices; do printf -- '---|'; done)"
idsOf() { # FILE DEVICE: the generated ids; the logits of every step go to $work/logits.f32
  T "$cli" run "$1" -p "$prompt" -n $steps --temp 0 --ignore-eos --print-ids --device "$2" \
    --logits-out "$work/logits.f32" 2>>"$work/run.log" | awk -F': ' '/^generated ids:/ {print $2}' | tr -s ' ,' ' ' | sed 's/^ //;s/ $//' ||
    true # a failed run prints nothing: "no output" in its cell
}
# WANT GOT [GOT's logits file] [WANT's top-2 gaps]: "same", or where they part and by how much: the
# gap between GOT's logits of its token and of WANT's there (and WANT's own top-2 gap). Within
# 2e-2 (the logit tolerance against llama.cpp) either way is a near-tie.
compare() {
  python3 -c 'import sys, os, array
a, b = sys.argv[1].split(), sys.argv[2].split()
if not b: print("no output"); sys.exit()
if not a: print("(no reference)"); sys.exit()
k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
if k is None: print("same" if len(a) == len(b) else "length %d vs %d" % (len(b), len(a))); sys.exit()
note, tie = [], False
path, gaps = (sys.argv[3:] + ["", ""])[:2]
if path and os.path.exists(path):
    x = array.array("f"); x.frombytes(open(path, "rb").read())
    vocab = len(x) // len(b)
    if vocab and max(int(a[k]), int(b[k])) < vocab:
        g = x[k * vocab + int(b[k])] - x[k * vocab + int(a[k])]
        note.append("gap %.2g" % g)
        tie = g < 2e-2
if gaps:
    theirs = gaps.split()
    if k < len(theirs):
        note.append("their top-2 %.2g" % float(theirs[k]))
        tie = tie or float(theirs[k]) < 2e-2
verdict = "near-tie" if tie else "DIFFERS"
print("%s at %d%s" % (verdict, k, (" (" + ", ".join(note) + ")") if note else ""))' "$@"; }
for p in $presets; do
  f=$work/$p-Q8_0.gguf
  if [ ! -s "$f" ]; then
    T "$cli" synth --preset "$p" --type Q8_0 --threads "$(nproc)" --vocab "$vocab" -o "$f.tmp" >/dev/null 2>>"$work/synth.log" && mv "$f.tmp" "$f" ||
      { note "| $p | synth failed (see $work/synth.log) |"; continue; }
  fi
  want=; wantGaps=
  if [ "$haveRef" = 1 ]; then
    j=$(T "$refBench" --backend-dir "$refVulkan" -m "$f" --cpu -p 0 -n 0 --greedy-ids "$prompt" $steps 2>>"$work/ref.log" || true)
    want=$(echo "$j" | field greedy_ids); wantGaps=$(echo "$j" | field greedy_gaps)
  fi
  cpuIds=$(idsOf "$f" cpu)
  row="| $p | ${want:+ran} | $(compare "$want" "$cpuIds" "$work/logits.f32" "$wantGaps")"
  refIds=$(idsOf "$f" ref)
  row="$row | $(compare "$want" "$refIds" "$work/logits.f32" "$wantGaps")"
  for d in $devices; do
    got=$(idsOf "$f" "$d")
    vsRef=$(compare "$want" "$got" "$work/logits.f32" "$wantGaps"); vsFp32=$(compare "$refIds" "$got" "$work/logits.f32")
    row="$row | $vsRef$([ "$vsFp32" = same ] && echo ' (as ref)' || echo "; ref: $vsFp32")"
  done
  note "$row |"
done

# ---- speed ----------------------------------------------------------------------------------
# One table row from the A B pairs on stdin: FILE DEVICE COLUMNS (ours theirs ours theirs ...
# per line, "-" where a run failed); each cell the medians and the median ratio.
pairTable() {
  python3 -c 'import sys, statistics as st
cols = int(sys.argv[3])
rows = [l.split() for l in sys.stdin.read().strip().splitlines() if len(l.split()) == cols]
num = lambda x: float(x) if x != "-" else None
def cell(a, b):
    A = [num(r[a]) for r in rows if num(r[a])]
    B = [num(r[b]) for r in rows if num(r[b])]
    if not A: return "failed" + (" vs %.1f" % st.median(B) if B else "")
    if not B: return "%.1f vs failed" % st.median(A)
    ratios = [num(r[a]) / num(r[b]) for r in rows if num(r[a]) and num(r[b])]
    return "%.1f vs %.1f = **%.2f×**" % (st.median(A), st.median(B), st.median(ratios))
print("| %s | %s | %s |" % (sys.argv[1], sys.argv[2], " | ".join(cell(c, c + 1) for c in range(0, cols, 2))))' "$@"
}
if [ -n "${BENCH_FILES:-}" ]; then files=$BENCH_FILES
else
  if [ "$quick" = 1 ]; then specs="llama-tiny:Q4_K_M: qwen3moe-tiny:Q4_K_M: qwen35-tiny:Q4_K_M:"
  else specs="llama3.2-1b:Q4_K_M: qwen3-30b-a3b:Q4_K_M:8 qwen35-2b:Q4_K_M:"; fi
  files=
  for s in $specs; do
    IFS=: read -r p t layers <<<"$s"
    f=$work/$p${layers:+-L$layers}-$t.gguf
    if [ ! -s "$f" ]; then
      say "synthesizing $f"
      T "$cli" synth --preset "$p" --type "$t" --threads "$(nproc)" --vocab "$vocab" ${layers:+--layers $layers} -o "$f.tmp" >/dev/null 2>>"$work/synth.log" && mv "$f.tmp" "$f"
    fi
    files="$files $f"
  done
fi
note ""
note "## Speed, every layer on the device: tokens/s, ours vs llama.cpp's build for the device (median of $pairs A B pairs)"
note ""
note "pp$pp and tg$tg as llama-bench; $streams streams: $streams requests of $sp prompt + $sg generated tokens at"
note "once, aggregate generated tokens/s (ours: hearth-cli bench-serve through the scheduler; llama.cpp: one"
note "batch of $streams sequences per step). Random weights of the real shapes. \"failed\": see work/*.log."
note ""
note "| file | device | pp$pp | tg$tg | $streams streams |"
note "|---|---|---|---|---|"
for f in $files; do
  for d in $devices; do
    say "speed $(basename "$f") on $d"
    raw=$work/speed-$(basename "$f")-${d/:/-}.txt
    : >"$raw"
    # Each pair's figures land in $raw as they come (a check stopped early keeps them).
    rows=$(for i in $(seq "$pairs"); do
      o=$(T "$cli" bench "$f" -p "$pp" -n "$tg" --reps 1 --device "$d" --json 2>>"$work/bench.log" || echo '{}')
      rp=$(runRef "$d" -m "$f" -p "$pp" -n 0 -r 1 || echo '{}')
      rt=$(runRef "$d" -m "$f" -p 0 -n "$tg" -r 1 || echo '{}')
      s=$(T "$cli" bench-serve "$f" --device "$d" --concurrency "$streams" --prompt-len "$sp" --gen-len "$sg" --no-sequential --json 2>>"$work/bench.log" || echo '{}')
      rs=$(runRef "$d" -m "$f" -p "$sp" -n "$sg" -r 1 --parallel "$streams" || echo '{}')
      for v in "$o pp_tok_s" "$rp pp" "$o tg_tok_s" "$rt tg" "$s runs.0.aggregate_tok_s" "$rs streams_tok_s"; do
        x=$(echo "${v% *}" | field "${v##* }"); printf '%s ' "${x:--}"
      done | tee -a "$raw"
      echo | tee -a "$raw"
    done)
    pairTable "$(basename "$f")" "$d" 6 <<<"$rows" | tee -a "$md"
  done
done

# ---- experts in RAM -------------------------------------------------------------------------
# The MoE files again with every layer's experts in RAM (ours --cpu-moe, llama.cpp --n-cpu-moe
# over every layer): attention, the router and the K/V cache on the device, experts on the CPU.
moeFiles=
for f in $files; do
  n=$("$cli" inspect "$f" --json 2>/dev/null | field hyperparameters.expert_count || true)
  [ "${n:-0}" -gt 0 ] 2>/dev/null && moeFiles="$moeFiles $f"
done
if [ -n "$moeFiles" ]; then
  note ""
  note "## Experts in RAM: every layer on the device, every expert on the CPU (ours --cpu-moe, llama.cpp --n-cpu-moe)"
  note ""
  note "| file | device | pp$pp | tg$tg |"
  note "|---|---|---|---|"
  for f in $moeFiles; do
    layers=$("$cli" inspect "$f" --json 2>/dev/null | field hyperparameters.block_count || echo 999)
    for d in $devices; do
      say "experts in RAM: $(basename "$f") on $d"
      raw=$work/cpumoe-$(basename "$f")-${d/:/-}.txt
      : >"$raw"
      rows=$(for i in $(seq "$pairs"); do
        o=$(T "$cli" bench "$f" -p "$pp" -n "$tg" --reps 1 --device "$d" --cpu-moe --json 2>>"$work/bench.log" || echo '{}')
        rp=$(runRef "$d" -m "$f" -p "$pp" -n 0 -r 1 --n-cpu-moe "$layers" || echo '{}')
        rt=$(runRef "$d" -m "$f" -p 0 -n "$tg" -r 1 --n-cpu-moe "$layers" || echo '{}')
        for v in "$o pp_tok_s" "$rp pp" "$o tg_tok_s" "$rt tg"; do
          x=$(echo "${v% *}" | field "${v##* }"); printf '%s ' "${x:--}"
        done | tee -a "$raw"
        echo | tee -a "$raw"
      done)
      pairTable "$(basename "$f")" "$d" 4 <<<"$rows" | tee -a "$md"
    done
  done
fi
note ""
note "Raw results: $out (selftest-*.json, work/speed-*.txt: ours/theirs pp, tg, streams per pair;"
note "work/cpumoe-*.txt: the same with experts in RAM; work/*.log)."
say "done: $md"
