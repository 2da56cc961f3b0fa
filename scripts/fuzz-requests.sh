#!/usr/bin/env bash
# Fuzzes what reads client input in the server (request parsers, grammars, JSON schemas, the
# streamed-output readers, image decoding) for SECONDS (default 60) with libFuzzer + ASan + UBSan.
# Exits non-zero on any crash, leak, timeout or out-of-memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
fuzzer=build/fuzz/bin/fuzz_requests
if [[ ! -x $fuzzer ]]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz --target fuzz_requests
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
# Seeds: the first byte picks the target (see tests/fuzz/fuzz_requests.cpp).
python3 - "$work/corpus" <<'PY'
import os, sys
out = sys.argv[1]
seeds = [
    (0, b'{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f",'
        b'"parameters":{"type":"object"}}}],"tool_choice":"required","response_format":{"type":"json_schema",'
        b'"json_schema":{"name":"x","schema":{"type":"integer"}}},"reasoning_effort":"low","stream":true}'),
    (1, b'{"prompt":[1,2,3],"max_tokens":4,"grammar":"root ::= \\"a\\"*","logprobs":2,"stop":["x"]}'),
    (2, b'{"model":"m","messages":[{"role":"user","content":"hi"}],"format":{"type":"object"},'
        b'"options":{"temperature":0.5,"num_predict":3,"stop":["a"]},"think":true,"keep_alive":"5m"}'),
    (3, b'{"model":"m","prompt":"hi","raw":true,"format":"json","context":[1,2],"stream":false}'),
    (4, b'root ::= obj\nobj ::= "{" ( [a-z]+ ":" [0-9]{1,3} )? "}"\x00{abc:12}'),
    (5, b'{"type":"object","properties":{"a":{"type":"string","pattern":"^[A-Z]{2}-\\\\d+$"},'
        b'"b":{"$ref":"#/$defs/n"}},"required":["a"],"$defs":{"n":{"type":"integer","minimum":-3,"maximum":70}}}'),
    (6, b'<tool_call>\n{"name": "f", "arguments": {"a": [1, "}"]}}\n</tool_call>[TOOL_CALLS][{"name":"g"}]'),
    (7, b'<think>plan</think>\n\nanswer'),
    (9, b'{"model":"m","max_tokens":16,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user",'
        b'"content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":'
        b'"image/png","data":"aGk="}},{"type":"tool_result","tool_use_id":"t","content":"r"}]}],'
        b'"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"stream":true}'),
    (10, b'{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},'
         b'{"type":"input_image","image_url":"data:image/png;base64,aGk="}]},'
         b'{"type":"function_call_output","call_id":"c","output":"x"}],"instructions":"be brief",'
         b'"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}}'),
    (11, b'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='),
    (12, b'aGVsbG8gd29ybGQ='),
    (8, b'<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json'
        b'<|message|>{"a":1}'),
]
# Images: a 2 x 2 PNG (zlib from Python), a two-frame GIF, a WebP header.
import struct, zlib
def chunk(kind, payload):
    return struct.pack('>I', len(payload)) + kind + payload + struct.pack('>I', zlib.crc32(kind + payload))
raw = b''.join(b'\0' + bytes([40 * x + y for x in range(6)]) for y in range(2))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 2, 2, 8, 2, 0, 0, 0)) + \
      chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
gif = bytes([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0, 1, 0, 0x80, 0, 0, 0xff, 0, 0, 0, 0, 0,
             0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0, 0x3b])
webp = b'RIFF' + struct.pack('<I', 26) + b'WEBPVP8L' + struct.pack('<I', 14) + b'\x2f\x01\x00\x00\x00' + b'\0' * 9
seeds += [(13, png), (13, gif), (13, webp), (13, b'\xff\xd8\xff\xe0' + b'\0' * 16)]
for i, (sel, body) in enumerate(seeds):
    open(os.path.join(out, 'seed-%d' % i), 'wb').write(bytes([sel]) + body)
PY
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
set +e
"$fuzzer" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 \
  -max_len=16384 -print_final_stats=1 -artifact_prefix="$work/artifacts/" 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
set -e
if [[ $status -ne 0 ]] || compgen -G "$work/artifacts/*" >/dev/null; then
  echo "fuzz-requests: FAILED (exit $status); reproducer(s):" >&2
  ls -l "$work/artifacts" >&2
  mkdir -p build/fuzz/findings && cp "$work"/artifacts/* build/fuzz/findings/ 2>/dev/null || true
  exit 1
fi
echo "fuzz-requests: no findings in ${seconds}s"
