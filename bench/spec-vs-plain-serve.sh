#!/usr/bin/env bash
# Speculative decoding against none on hearth-server, A B A B: serves one model with the given
# speculation options and without, alternating, drives each with the reference's load generator
# (serve-bench.mjs, C requests at a time) and prints both aggregates, their medians and the ratio.
# The check behind "never a slowdown": with a draft that is seldom right (a random draft model),
# the adaptive draft length must bring the aggregate back to plain decoding's.
# Usage: bench/spec-vs-plain-serve.sh MODEL.gguf SPEC-OPTIONS...
#   e.g. bench/spec-vs-plain-serve.sh 1b-Q4_0.gguf --spec draft -md 1b-L2-Q4_0.gguf
#   env: HEARTH_BIN (default build/release/bin), HEARTH_TEST_DATA (default ../shared), ISA
#        (native, or a HEARTH_CPU_ISA level), THREADS (2), C (4: requests at once), R (2·C), P (128),
#        G (64), PAIRS (2)
set -euo pipefail
model=$(realpath "$1")
shift
here=$(cd "$(dirname "$0")/.." && pwd)
data=${HEARTH_TEST_DATA:-$here/../shared}
bin=${HEARTH_BIN:-$here/build/release/bin}
isa=${ISA:-native}; threads=${THREADS:-2}; con=${C:-4}; reqs=${R:-$((2 * con))}; prompt=${P:-128}; gen=${G:-64}
pairs=${PAIRS:-2}
work=$(mktemp -d /tmp/hearth-spec-serve-XXXXXX)
trap '[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; rm -rf "$work"' EXIT
env=()
[ "$isa" != native ] && env=(HEARTH_CPU_ISA="$isa")
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); ISA $isa; $threads threads;" \
     "$reqs requests, $con at a time, $prompt + $gen tokens; speculation: $*"

# Prints the aggregate generated tok/s of one server run with the options given.
run() {
  env "${env[@]}" "$bin/hearth-server" -m "$model" --port 18093 -t "$threads" -np "$con" "$@" \
    >"$work/server.log" 2>&1 &
  echo $! >"$work/pid"
  for _ in $(seq 1 600); do
    kill -0 "$(cat "$work/pid")" 2>/dev/null || { cat "$work/server.log" >&2; return 1; }
    curl -sf http://127.0.0.1:18093/health >/dev/null 2>&1 && break
    sleep 0.5
  done
  node "$data/tools/reference/serve-bench.mjs" --url http://127.0.0.1:18093 -c "$con" -n "$reqs" -p "$prompt" \
    -g "$gen" --vocab 259:32000 --json "$work/r.json" >/dev/null
  node -e "console.log(require('$work/r.json').runs[0].agg_gen_tok_s.toFixed(2))"
  kill "$(cat "$work/pid")"; wait "$(cat "$work/pid")" 2>/dev/null || true; rm -f "$work/pid"
}

plain=(); spec=()
for _ in $(seq 1 "$pairs"); do
  plain+=("$(run)"); spec+=("$(run "$@")")
  echo "pair: plain ${plain[-1]} tok/s, speculative ${spec[-1]} tok/s"
done
node -e '
const med = (a) => { a = a.map(Number).sort((x, y) => x - y); const m = a.length >> 1; return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
const [p, s] = [process.argv[1].split(" "), process.argv[2].split(" ")];
console.log(`median: plain ${med(p).toFixed(2)}, speculative ${med(s).toFixed(2)} tok/s = ${(med(s) / med(p)).toFixed(3)}x` +
            ` (pairs ${s.map((v, i) => (v / p[i]).toFixed(3)).join(", ")})`);' "${plain[*]}" "${spec[*]}"
