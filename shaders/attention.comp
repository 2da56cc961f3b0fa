// Paged attention for decode and prefill chunks: one workgroup per (head, token). Token t at
// position pos attends causally to positions [0, pos] of its sequence (with a sliding window
// w > 0: (pos - w, pos]), whose K/V rows live in the cache at slot
// table[tableOffset + p / blockSize] * blockSize + p % blockSize. GQA: query head h reads KV head
// h / (nHead / nHeadKv). Scores are scale * q.k, soft-capped to softcap * tanh(s / softcap) when
// softcap > 0. With sinks (gpt-oss), head h's softmax also counts a position of score sinks[h]
// and no value. Online softmax over chunks of 64 positions; headDim <= 256. K/V as kv.glsl reads
// them (Q8_0 values d * q in fp32; with heads of whole blocks the scores read a block's scale once
// and its quants four to a word). WITHIN (encoders, an image's tokens: attention within the
// sequence): token t instead attends to positions [0, last] of its sequence, last the furthest
// position of any token of the step with t's table offset (a window still counted back from pos).
#version 450
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };          // [n][nHead][headDim]
layout(std430, binding = 1) readonly buffer K { KV_WORD kc[]; };       // [slot][nHeadKv][headDim]
layout(std430, binding = 2) readonly buffer V { KV_WORD vc[]; };
layout(std430, binding = 3) readonly buffer Info { ivec2 info[]; };    // [n]: (pos, tableOffset)
layout(std430, binding = 4) readonly buffer Tables { int tables[]; };  // block ids
layout(std430, binding = 5) writeonly buffer Out { float o[]; };      // [n][nHead][headDim]
layout(std430, binding = 6) readonly buffer Sinks { float sinks[]; };  // [nHead] when hasSinks
layout(push_constant) uniform Params {
    uint n; uint nHead; uint nHeadKv; uint headDim; uint blockSize; float scale; uint window; float softcap;
    uint hasSinks;
} p;

shared float qs[256];
shared float sc[64];
shared uint slotOf[64];
#ifdef WITHIN
shared int lastOf[64];
#endif

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint D = p.headDim, rowSize = p.nHeadKv * D, kvh = h / (p.nHead / p.nHeadKv);
#ifdef WITHIN
    // The sequence's tokens share their block table's offset: the furthest of their positions.
    int last = info[t].x;
    for (uint u = tid; u < p.n; u += 64u)
        if (info[u].y == info[t].y) last = max(last, info[u].x);
    lastOf[tid] = last;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) lastOf[tid] = max(lastOf[tid], lastOf[tid + s]);
        barrier();
    }
    const int pos = lastOf[0];
#else
    const int pos = info[t].x;
#endif
    const uint end = uint(pos) + 1u, tableOffset = uint(info[t].y);
    // A window counts back from the token's own position (WITHIN too).
    const uint first = p.window > 0u ? uint(max(0, info[t].x - int(p.window) + 1)) : 0u;
    for (uint d = tid; d < D; d += 64u) qs[d] = q[(t * p.nHead + h) * D + d] * p.scale;
    barrier();
    // A sink starts the softmax as a first score whose weight adds to l only.
    float m = p.hasSinks != 0u ? sinks[h] : -1.0 / 0.0, l = p.hasSinks != 0u ? 1.0 : 0.0;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0); // dims tid, tid + 64, ...
    for (uint p0 = first; p0 < end; p0 += 64u) {
        const uint pp = p0 + tid;
        float s = -1.0 / 0.0;
        if (pp < end) {
            const uint slot = uint(tables[tableOffset + pp / p.blockSize]) * p.blockSize + pp % p.blockSize;
            slotOf[tid] = slot;
            const uint kb = slot * rowSize + kvh * D;
            s = 0.0;
#if defined(KV_Q8_0)
            if ((D & 31u) == 0u) { // whole blocks: a scale each, then 4 quants per word read
                for (uint d = 0u; d < D; d += 32u) {
                    const uint b = (kb + d) >> 5, at = b * 34u + 2u, w = at >> 2;
                    const float scale = KV_Q8_SCALE(kc, b);
                    uint lo = kc[w]; // with the quants at a half word (even b): their first two
                    for (uint k = 0u; k < 8u; ++k) {
                        uint word = lo;
                        if ((at & 3u) != 0u) {
                            const uint hi = kc[w + k + 1u];
                            word = (lo >> 16) | (hi << 16);
                            lo = hi;
                        } else if (k < 7u) {
                            lo = kc[w + k + 1u];
                        }
                        for (uint i = 0u; i < 4u; ++i)
                            s += qs[d + 4u * k + i] * (scale * float(bitfieldExtract(int(word), int(8u * i), 8)));
                    }
                }
            } else {
                for (uint d = 0u; d < D; ++d) s += qs[d] * KV_LOAD(kc, kb + d);
            }
#else
            for (uint d = 0u; d < D; ++d) s += qs[d] * KV_LOAD(kc, kb + d);
#endif
            if (p.softcap > 0.0) s = p.softcap * tanh(clamp(s / p.softcap, -15.0, 15.0));
        }
        sc[tid] = s;
        barrier();
        const uint cnt = min(64u, end - p0);
        float cm = sc[0];
        for (uint j = 1u; j < cnt; ++j) cm = max(cm, sc[j]);
        const float nm = max(m, cm);
        const float corr = exp(m - nm); // 0 on the first chunk (m = -inf, nm finite)
        l *= corr;
        for (uint k = 0u; k < 4u; ++k) acc[k] *= corr;
        for (uint j = 0u; j < cnt; ++j) {
            const float wgt = exp(sc[j] - nm);
            l += wgt;
            const uint vb = slotOf[j] * rowSize + kvh * D;
            for (uint k = 0u; k < 4u; ++k) {
                const uint d = tid + 64u * k;
                if (d < D) acc[k] += wgt * KV_LOAD(vc, vb + d);
            }
        }
        m = nm;
        barrier();
    }
    for (uint k = 0u; k < 4u; ++k) {
        const uint d = tid + 64u * k;
        if (d < D) o[(t * p.nHead + h) * D + d] = acc[k] / l;
    }
}
