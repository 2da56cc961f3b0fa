#!/usr/bin/env bash
# Serves one model with hearth-server and with llama.cpp's llama-server, one after the other on
# loopback, and drives both with the reference's load generator (serve-bench.mjs): R requests one
# at a time, then R at once, each of P prompt + G generated tokens; prints both engines' aggregate
# tok/s and the ratios. ISA=avx2|avxvnni restricts both engines to that CPU level (Hearth with
# HEARTH_CPU_ISA, llama.cpp with only its haswell or alderlake CPU variant beside the binary).
# Usage: bench/serve-vs-llamacpp.sh MODEL.gguf
#   env: LLAMA_SERVER (llama-server built by shared/tools/reference/server/build.sh), HEARTH_BIN
#        (default build/release/bin), HEARTH_REF (default ~/.cache/hearth-ref), HEARTH_TEST_DATA
#        (default ../shared), ISA (native), THREADS (2), R (16), P (128), G (64), PAIRS (1)
#   Speculative decoding, both servers alike: DRAFT=SMALL.gguf drafts SPEC_MAX tokens (4) every
#   step (llama.cpp's draft-simple; Hearth's --spec draft --spec-fixed), and SPEC_SYNTH=L accepts
#   them at random for a mean accepted length L (--spec-synth-len, benchmarking only). MTP=1
#   drafts with the model's own multi-token-prediction layer instead (llama.cpp's draft-mtp with
#   --spec-draft-p-min 0; Hearth's --spec mtp --spec-fixed). CONCURRENT=0 skips the R-at-once run.
set -euo pipefail
model=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
data=${HEARTH_TEST_DATA:-$here/../shared}
bin=${HEARTH_BIN:-$here/build/release/bin}
ref=${HEARTH_REF:-$HOME/.cache/hearth-ref}
server=${LLAMA_SERVER:?set LLAMA_SERVER to a llama-server built by shared/tools/reference/server/build.sh}
isa=${ISA:-native}; threads=${THREADS:-2}; reqs=${R:-16}; prompt=${P:-128}; gen=${G:-64}; pairs=${PAIRS:-1}
bench="node $data/tools/reference/serve-bench.mjs"
llamaSpec=(); hearthSpec=()
if [ -n "${DRAFT:-}" ]; then
  llamaSpec=(--spec-type draft-simple -md "$(realpath "$DRAFT")" --spec-draft-n-max "${SPEC_MAX:-4}")
  hearthSpec=(--spec draft -md "$(realpath "$DRAFT")" --spec-fixed --spec-max "${SPEC_MAX:-4}")
fi
if [ "${MTP:-0}" = 1 ]; then
  llamaSpec=(--spec-type draft-mtp --spec-draft-p-min 0 --spec-draft-n-max "${SPEC_MAX:-4}")
  hearthSpec=(--spec mtp --spec-fixed --spec-max "${SPEC_MAX:-4}")
fi
if [ -n "${SPEC_SYNTH:-}" ]; then
  llamaSpec+=(--spec-synth-len "$SPEC_SYNTH"); hearthSpec+=(--spec-synth-len "$SPEC_SYNTH")
fi
work=$(mktemp -d /tmp/hearth-serve-vs-XXXXXX)
# Servers run in subshells: their pids go to files, so that any exit stops them.
trap 'for f in "$work"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; rm -rf "$work"' EXIT

# llama-server loads the CPU variants found beside its binary: a folder with one variant only.
case $isa in
native) variant= ;;
avx2) variant=haswell ;;
avxvnni) variant=alderlake ;;
*) echo "ISA must be native, avx2 or avxvnni" >&2; exit 2 ;;
esac
lsdir=$(dirname "$(realpath "$server")")
if [ -n "$variant" ]; then
  lsdir=$(bash "$data/tools/reference/backend-dir.sh" "$variant" "$work/backend" "$ref")
  for f in "$(dirname "$(realpath "$server")")"/bins/*.so; do
    case "$(basename "$f")" in libggml-cpu-*) ;; *) ln -sfn "$f" "$lsdir/" ;; esac
  done
fi
[ "$(realpath "$server")" -ef "$lsdir/llama-server" ] || cp "$(realpath "$server")" "$lsdir/llama-server"
hearthEnv=()
[ "$isa" != native ] && hearthEnv=(HEARTH_CPU_ISA="$isa")
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); ISA mode $isa${variant:+ (llama.cpp: libggml-cpu-$variant.so only)}; $threads threads; $reqs x ($prompt + $gen) tokens${DRAFT:+; draft $(basename "$DRAFT"), ${SPEC_MAX:-4} drafts}${MTP:+; multi-token prediction (MTP=$MTP), ${SPEC_MAX:-4} drafts}${SPEC_SYNTH:+, synthetic acceptance length $SPEC_SYNTH}"

waitUp() { # port pid
  for _ in $(seq 1 600); do
    kill -0 "$2" 2>/dev/null || { echo "server for port $1 exited" >&2; return 1; }
    curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "server on port $1 did not come up" >&2; return 1
}
# Prints "sequential concurrent" aggregate tok/s of the server on port $1.
drive() {
  local seq con
  seq=$($bench --url "http://127.0.0.1:$1" -c 1 -n "$reqs" -p "$prompt" -g "$gen" --vocab 259:32000 --json "$work/s.json" >/dev/null &&
        node -e "const r=require('$work/s.json');console.log(r.runs[0].agg_gen_tok_s.toFixed(2))")
  con=0
  [ "${CONCURRENT:-1}" != 0 ] &&
  con=$($bench --url "http://127.0.0.1:$1" -c "$reqs" -n "$reqs" -p "$prompt" -g "$gen" --vocab 259:32000 --json "$work/c.json" >/dev/null &&
        node -e "const r=require('$work/c.json');console.log(r.runs[0].agg_gen_tok_s.toFixed(2))")
  echo "$seq $con"
}
portFree() {
  if curl -s "http://127.0.0.1:$1/health" >/dev/null 2>&1; then echo "port $1 is taken" >&2; return 1; fi
}
runLlama() {
  portFree 18091
  "$lsdir/llama-server" -m "$model" --port 18091 -t "$threads" -np "$reqs" -c $((reqs * (prompt + gen + 64))) \
    --load-mode none "${llamaSpec[@]}" >"$work/llama.log" 2>&1 &
  local pid=$!
  echo $pid >"$work/llama.pid"
  waitUp 18091 $pid; drive 18091; kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
}
runHearth() {
  portFree 18092
  env "${hearthEnv[@]}" "$bin/hearth-server" -m "$model" --port 18092 -t "$threads" -np "$reqs" "${hearthSpec[@]}" \
    >"$work/hearth.log" 2>&1 &
  local pid=$!
  echo $pid >"$work/hearth.pid"
  waitUp 18092 $pid; drive 18092; kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
}
for i in $(seq 1 "$pairs"); do
  read -r ls lc < <(runLlama) || { echo "llama-server run failed (log: $work/llama.log)" >&2; cat "$work/llama.log" >&2; exit 1; }
  read -r hs hc < <(runHearth) || { echo "hearth-server run failed" >&2; cat "$work/hearth.log" >&2; exit 1; }
  awk -v hs="$hs" -v hc="$hc" -v ls="$ls" -v lc="$lc" -v m="$(basename "$model")" 'BEGIN {
    printf "%s  one at a time %.2f vs %.2f tok/s = %.2fx   %s at once %.2f vs %.2f = %.2fx   batch gain %.2fx vs %.2fx\n",
      m, hs, ls, hs / ls, ENVIRON["R"] ? ENVIRON["R"] : 16, hc, lc, hc / lc, hc / hs, lc / ls }'
done
