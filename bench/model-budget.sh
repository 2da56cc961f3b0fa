#!/usr/bin/env bash
# Several models under one memory budget: hearth-server --models-dir with four models of which
# only two fit --models-memory, and mixed requests from several clients at once. Prints the
# errors (there should be none), the loads the server logged, the budget, and the server's
# resident memory sampled every 50 ms (its peak against the budget plus what the server holds
# with no model: the router counts model files, K/V caches and states, not the process).
# The models are synthesized (llama 3.2 1B shapes cut to 2..5 layers, Q4_0), so that each has
# its own size and nothing is shared between them.
# Usage: bench/model-budget.sh
#   env: HEARTH_BIN (default build/release/bin), VOCAB (a llama-bpe vocabulary GGUF), THREADS (2),
#        REQUESTS (200), CLIENTS (8), TRACE (a file: the resident size every 50 ms and the server's
#        log lines, each with its time)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${HEARTH_BIN:-$here/build/release/bin}
vocab=${VOCAB:-${HEARTH_TEST_DATA:-$here/../shared}/models/ggml-vocab-llama-bpe.gguf}
threads=${THREADS:-2}; requests=${REQUESTS:-200}; clients=${CLIENTS:-8}
port=18095
work=$(mktemp -d /tmp/hearth-budget-XXXXXX)
trap '[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; rm -rf "$work"' EXIT
mkdir "$work/models"
names=(two three four five)
for i in 0 1 2 3; do
  "$bin/hearth-cli" synth --preset llama3.2-1b --type Q4_0 --layers $((i + 2)) --seed $((i + 1)) \
    --vocab "$vocab" -o "$work/models/${names[$i]}.gguf" >/dev/null 2>&1
done
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# The budget: the two largest models as the router counts them, plus a little.
"$bin/hearth-server" --models-dir "$work/models" --models-max 4 --port $port -t "$threads" --ctx 512 \
  >"$work/probe.log" 2>&1 &
echo $! >"$work/pid"
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
idle=$(rss_kib "$(cat "$work/pid")")
for n in "${names[@]}"; do
  curl -s -o /dev/null "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\":\"$n\",\"prompt\":\"hi\",\"max_tokens\":1}"
done
sizes=$(curl -s "http://127.0.0.1:$port/v1/models" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const m of JSON.parse(s).data)console.log(m.id, m.memory_bytes)})')
kill "$(cat "$work/pid")"; wait "$(cat "$work/pid")" 2>/dev/null || true
budget=$(echo "$sizes" | awk '{print $2}' | sort -g | tail -2 | awk '{s+=$1} END {printf "%d", s * 1.05}')
smallest_two=$(echo "$sizes" | awk '{print $2}' | sort -g | head -3 | awk '{s+=$1} END {printf "%d", s}')
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $threads threads"
echo "models (as the router counts them, bytes):"; echo "$sizes" | sed 's/^/  /'
echo "budget: $budget bytes (the two largest + 5%; the three smallest need $smallest_two)"
echo "server with no model loaded: $((idle / 1024)) MiB resident"

"$bin/hearth-server" --models-dir "$work/models" --models-max 4 --models-memory "$budget" --port $port \
  -t "$threads" --ctx 512 >"$work/server.log" 2>&1 &
pid=$!; echo $pid >"$work/pid"
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
( peak=0; while kill -0 "$pid" 2>/dev/null; do
    r=$(rss_kib "$pid"); r=${r:-0}; [ "$r" -gt "$peak" ] && peak=$r && echo "$peak" >"$work/peak"
    [ -n "${TRACE:-}" ] && echo "$(date +%s.%N) rss $((r / 1024))" >>"$TRACE"
    sleep 0.05
  done ) &
[ -n "${TRACE:-}" ] && tail -f --pid="$pid" "$work/server.log" | while read -r line; do echo "$(date +%s.%N) $line" >>"$TRACE"; done &
sampler=$!
start=$(date +%s.%N)
seq 1 "$requests" | xargs -P "$clients" -I{} sh -c '
  names="two three four five"; i=$(( ({} * 7 + {} / 3) % 4 + 1 )); m=$(echo $names | cut -d" " -f$i)
  code=$(curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:'"$port"'/v1/completions \
    -H "Content-Type: application/json" -d "{\"model\":\"$m\",\"prompt\":\"story {}\",\"max_tokens\":8}")
  echo "$m $code"' >"$work/results"
end=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
errors=$(awk '$2 != 200' "$work/results" | wc -l)
echo "requests: $requests from $clients clients in $(echo "$end - $start" | bc -l | xargs printf '%.1f') s;" \
     "errors: $errors"; awk '{print $1}' "$work/results" | sort | uniq -c | sed 's/^/  /'
echo "loads logged: $(grep -c 'loading /' "$work/server.log")"
peak=$(cat "$work/peak" 2>/dev/null || echo 0)
printf 'peak resident: %d MiB; budget + idle server: %d MiB (%s)\n' "$((peak / 1024))" \
  "$(( (budget / 1024 + idle) / 1024 ))" "$( [ $((peak * 1024)) -le $((budget + idle * 1024)) ] && echo within || echo OVER)"
