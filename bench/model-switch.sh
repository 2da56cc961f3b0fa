#!/usr/bin/env bash
# Switching models on hearth-server --models-dir: the time to the first streamed token of a
# request for a model that is not loaded (its load + its prompt), against the same request once
# it is loaded (the prompt only), and a switch between two models where only one fits
# (--models-max 1: the other is unloaded first). The model is served under two names (hard
# links), so the second is a real second load. Prints each time and the medians over REPS rounds.
# Usage: bench/model-switch.sh MODEL.gguf
#   env: HEARTH_BIN (default build/release/bin), THREADS (2), P (prompt words, 64), REPS (3)
set -euo pipefail
model=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${HEARTH_BIN:-$here/build/release/bin}
threads=${THREADS:-2}; words=${P:-64}; reps=${REPS:-3}
work=$(mktemp -d /tmp/hearth-switch-XXXXXX)
trap '[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; rm -rf "$work"' EXIT
mkdir "$work/models"
ln "$model" "$work/models/first.gguf" 2>/dev/null || cp "$model" "$work/models/first.gguf"
ln "$model" "$work/models/second.gguf" 2>/dev/null || cp "$model" "$work/models/second.gguf"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $threads threads;" \
     "$(basename "$model") ($(du -h "$model" | cut -f1)); a prompt of $words words; --models-max 1"
"$bin/hearth-server" --models-dir "$work/models" --models-max 1 --port 18094 -t "$threads" --ctx 1024 \
  >"$work/server.log" 2>&1 &
echo $! >"$work/pid"
for _ in $(seq 1 600); do
  curl -sf http://127.0.0.1:18094/health >/dev/null 2>&1 && break
  sleep 0.1
done
prompt=$(for i in $(seq 1 "$words"); do printf 'word%d ' "$i"; done)

# Seconds to the first token of a completion on `model`: a whole one-token completion (its
# prompt and one step; a stream's first bytes leave before the prompt is read). Each prompt
# starts with a new word, so that no cached prefix shortens it.
ttft() {
  local n="$RANDOM$RANDOM$RANDOM" # each call runs in its own subshell: no counter survives
  curl -s -o /dev/null -w '%{time_total}' http://127.0.0.1:18094/v1/completions \
    -H 'Content-Type: application/json' \
    -d "{\"model\":\"$1\",\"prompt\":\"request$n $prompt\",\"max_tokens\":1}"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: >"$work/cold"; : >"$work/warm"
for r in $(seq 1 "$reps"); do
  # first is loaded (or second is, from the round before): each request below switches.
  cold=$(ttft first); warm=$(ttft first); cold2=$(ttft second); warm2=$(ttft second)
  printf 'round %d: first cold %.3f s, warm %.3f s; second cold %.3f s, warm %.3f s\n' \
    "$r" "$cold" "$warm" "$cold2" "$warm2"
  printf '%s\n%s\n' "$cold" "$cold2" >>"$work/cold"
  printf '%s\n%s\n' "$warm" "$warm2" >>"$work/warm"
done
c=$(median <"$work/cold"); w=$(median <"$work/warm")
printf 'median time to first token: not loaded %.3f s, loaded %.3f s (the load and switch: %.3f s)\n' \
  "$c" "$w" "$(echo "$c - $w" | bc -l)"
grep -c 'loading /' "$work/server.log" | xargs printf 'loads in the server log: %s\n'
