#!/usr/bin/env bash
# Fuzzes the GGUF reader and the model binding for SECONDS (default 60) with libFuzzer + ASan + UBSan.
# Seeds: small valid files made by this script.
# Exits non-zero on any crash, leak, timeout or out-of-memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
fuzzer=build/fuzz/bin/fuzz_gguf
if [[ ! -x $fuzzer ]]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz --target fuzz_gguf
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
# Small valid seeds made here (every value type, arrays, tensors of several types), so each run
# is fast; big real models make the fuzzer crawl.
python3 - "$work/corpus" <<'PY'
import struct, sys, os
out = sys.argv[1]
def s(x): b = x.encode(); return struct.pack('<Q', len(b)) + b
def kv(k, t, payload): return s(k) + struct.pack('<I', t) + payload
def gguf(kvs, tensors, align=32):
    h = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)) + b''.join(kvs)
    data, infos = b'', b''
    for name, ne, typ, raw in tensors:
        infos += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
        infos += struct.pack('<IQ', typ, len(data))
        data += raw + b'\0' * ((-len(raw)) % align)
    h += infos
    h += b'\0' * ((-len(h)) % align)
    return h + data
kvs = [kv('general.architecture', 8, s('llama')), kv('general.alignment', 4, struct.pack('<I', 32)),
       kv('a.u8', 0, b'\x01'), kv('a.i8', 1, b'\xff'), kv('a.u16', 2, b'\x01\x00'),
       kv('a.i16', 3, b'\xff\xff'), kv('a.i32', 5, struct.pack('<i', -3)), kv('a.f32', 6, struct.pack('<f', 0.5)),
       kv('a.bool', 7, b'\x01'), kv('a.u64', 10, struct.pack('<Q', 9)), kv('a.i64', 11, struct.pack('<q', -9)),
       kv('a.f64', 12, struct.pack('<d', 1.5)),
       kv('tokenizer.ggml.tokens', 9, struct.pack('<IQ', 8, 3) + s('a') + s('b') + s('<0x0A>')),
       kv('tokenizer.ggml.scores', 9, struct.pack('<IQ', 6, 3) + struct.pack('<3f', 0, -1, -2)),
       kv('tokenizer.ggml.token_type', 9, struct.pack('<IQ', 5, 3) + struct.pack('<3i', 1, 1, 6))]
tensors = [('token_embd.weight', [4, 3], 0, b'\x00' * 48), ('blk.0.attn_q.weight', [32, 2], 8, b'\x01' * 68),
           ('blk.0.ffn_down.weight', [256], 12, b'\x02' * 144), ('norm', [8], 1, b'\x03' * 16)]
open(os.path.join(out, 'seed-full.gguf'), 'wb').write(gguf(kvs, tensors))
# One tensor of every block-of-256 low-bit type (id: block bytes): IQ2_XXS, IQ2_XS, IQ3_XXS,
# IQ1_S, IQ3_S, IQ2_S, IQ1_M, TQ1_0, TQ2_0, with patterned bytes.
lowbit = {16: 66, 17: 74, 18: 98, 19: 50, 21: 110, 22: 82, 29: 56, 34: 54, 35: 66}
open(os.path.join(out, 'seed-lowbit.gguf'), 'wb').write(gguf(kvs[:2], [
    ('t%d' % typ, [256, 2], typ, bytes((i * 37 + typ) % 251 for i in range(2 * size)))
    for typ, size in lowbit.items()]))
open(os.path.join(out, 'seed-kv.gguf'), 'wb').write(gguf(kvs[:4], []))
open(os.path.join(out, 'seed-v2.gguf'), 'wb').write(gguf(kvs[:2], tensors[:1]).replace(b'GGUF\x03', b'GGUF\x02', 1))
# Tiny models that bind (E 8, 2 heads of 4, 1 KV head, F 16, vocabulary 6, one layer), so the
# fuzzer reaches the architectures' binding and graph building.
def model(arch):
    a = arch + '.'
    u32 = lambda k, v: kv(a + k, 4, struct.pack('<I', v))
    m = [kv('general.architecture', 8, s(arch)), u32('block_count', 1), u32('embedding_length', 8),
         u32('feed_forward_length', 16), u32('attention.head_count', 2), u32('attention.head_count_kv', 1)]
    if arch == 'gemma3': m += [u32('attention.sliding_window', 2)]
    if arch == 'gemma4':
        # One full-attention layer (pattern [false]) of heads of 4, V = K, with 4 experts of 8 and
        # per-layer embeddings of 4.
        m += [u32('attention.sliding_window', 2), u32('attention.key_length', 4), u32('attention.value_length', 4),
              u32('attention.key_length_swa', 4), u32('attention.value_length_swa', 4),
              kv(a + 'attention.sliding_window_pattern', 9, struct.pack('<IQ', 7, 1) + b'\x00'),
              kv(a + 'final_logit_softcapping', 6, struct.pack('<f', 30.0)),
              u32('expert_count', 4), u32('expert_used_count', 2), u32('expert_feed_forward_length', 8),
              u32('embedding_length_per_layer_input', 4)]
    if arch in ('qwen3moe', 'gpt-oss'): m += [u32('expert_count', 4), u32('expert_used_count', 2), u32('expert_feed_forward_length', 8)]
    if arch == 'gpt-oss': m += [u32('attention.sliding_window', 2), kv(a + 'rope.scaling.type', 8, s('yarn')),
                                kv(a + 'rope.scaling.factor', 6, struct.pack('<f', 32.0))]
    if arch == 'phi3': m += [u32('attention.sliding_window', 2), u32('rope.scaling.original_context_length', 4),
                             kv(a + 'rope.scaling.attn_factor', 6, struct.pack('<f', 1.2))]
    t = []
    def add(name, *ne):
        n = 1
        for d in ne: n *= d
        t.append((name, list(ne), 0, struct.pack('<%df' % n, *[((i * 7) % 13 - 6) * 0.05 for i in range(n)])))
    add('token_embd.weight', 8, 6); add('output_norm.weight', 8)
    p = 'blk.0.'
    for n in ('attn_norm', 'ffn_norm'): add(p + n + '.weight', 8)
    if arch == 'gemma4':
        add(p + 'attn_q.weight', 8, 8); add(p + 'attn_k.weight', 8, 4); add('rope_freqs.weight', 2)
        add(p + 'layer_output_scale.weight', 1); add(p + 'ffn_gate_inp.weight', 8, 4); add(p + 'ffn_down_exps.scale', 4)
        for n in ('ffn_gate_inp.scale', 'pre_ffw_norm_2.weight', 'post_ffw_norm_1.weight', 'post_ffw_norm_2.weight'): add(p + n, 8)
        add(p + 'ffn_gate_up_exps.weight', 8, 16, 4); add(p + 'ffn_down_exps.weight', 8, 8, 4)
        add('per_layer_token_embd.weight', 4, 6); add('per_layer_model_proj.weight', 8, 4); add('per_layer_proj_norm.weight', 4)
        add(p + 'inp_gate.weight', 8, 4); add(p + 'proj.weight', 4, 8); add(p + 'post_norm.weight', 8)
    elif arch == 'phi3':
        # Fused q/k/v (8 + 4 + 4 rows) and gate/up (16 + 16), LongRoPE factors for the 4 rotated dims.
        add(p + 'attn_qkv.weight', 8, 16); add('rope_factors_short.weight', 2); add('rope_factors_long.weight', 2)
    else:
        add(p + 'attn_q.weight', 8, 8); add(p + 'attn_k.weight', 8, 4); add(p + 'attn_v.weight', 8, 4)
    add(p + 'attn_output.weight', 8, 8)
    if arch in ('qwen3moe', 'gpt-oss'):
        add(p + 'ffn_gate_inp.weight', 8, 4); add(p + 'ffn_gate_exps.weight', 8, 8, 4)
        add(p + 'ffn_up_exps.weight', 8, 8, 4); add(p + 'ffn_down_exps.weight', 8, 8, 4)
    if arch == 'gpt-oss':
        add('output.weight', 8, 6); add(p + 'post_attention_norm.weight', 8); add(p + 'attn_sinks.weight', 2)
        add(p + 'attn_q.bias', 8); add(p + 'attn_k.bias', 4); add(p + 'attn_v.bias', 4); add(p + 'attn_output.bias', 8)
        add(p + 'ffn_gate_inp.bias', 4)
        for n in ('ffn_gate_exps', 'ffn_up_exps', 'ffn_down_exps'): add(p + n + '.bias', 8, 4)
    elif arch == 'phi3':
        add(p + 'ffn_up.weight', 8, 32); add(p + 'ffn_down.weight', 16, 8)
    else:
        add(p + 'ffn_gate.weight', 8, 16); add(p + 'ffn_up.weight', 8, 16); add(p + 'ffn_down.weight', 16, 8)
    if arch == 'qwen2': add(p + 'attn_q.bias', 8); add(p + 'attn_k.bias', 4); add(p + 'attn_v.bias', 4)
    if arch in ('qwen3', 'qwen3moe', 'gemma3', 'gemma4'): add(p + 'attn_q_norm.weight', 4); add(p + 'attn_k_norm.weight', 4)
    if arch in ('gemma3', 'gemma4'): add(p + 'post_attention_norm.weight', 8); add(p + 'post_ffw_norm.weight', 8)
    return gguf(m, t)
for arch in ('llama', 'qwen2', 'qwen3', 'qwen3moe', 'gemma3', 'gpt-oss', 'phi3', 'gemma4'):
    open(os.path.join(out, 'seed-' + arch + '.gguf'), 'wb').write(model(arch))
PY
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
set +e
"$fuzzer" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb=512 -timeout=5 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/" 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
set -e
if [[ $status -ne 0 ]] || compgen -G "$work/artifacts/*" >/dev/null; then
  echo "fuzz: FAILED (exit $status); reproducer(s):" >&2
  ls -l "$work/artifacts" >&2
  mkdir -p build/fuzz/findings && cp "$work"/artifacts/* build/fuzz/findings/ 2>/dev/null || true
  exit 1
fi
echo "fuzz: no findings in ${seconds}s"
