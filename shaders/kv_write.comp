// Writes src[n][rowSize] into a paged K or V cache at each token's slot: cache[slot][rowSize],
// one invocation per pair of values (rowSize is even). KV_Q8_0: one invocation per block of 32
// values, quantized bit for bit as the CPU's quantizeQ8_0 (d = amax / 127 over the finite values,
// stored as fp16 rounded to nearest even; q = x * (1 / d) rounded half away from zero, 0 for a
// value not finite), both divisions and the fp16 rounding done in integers so that no driver's
// approximate division or conversion changes a bit.
#version 450
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) readonly buffer Slots { int slots[]; };
#if defined(KV_Q8_0)
layout(std430, binding = 2) buffer Cache { uint cache[]; };
#else
layout(std430, binding = 2) writeonly buffer Cache { KV_WORD cache[]; };
#endif
layout(push_constant) uniform Params { uint n; uint rowSize; } p;

#if defined(KV_Q8_0)
// a / b correctly rounded (to nearest even), for the bits of finite a >= 0 and b > 0 (subnormals
// too): the quotient's mantissa by long division, 26 bits and a sticky remainder.
uint divideExact(uint a, uint b) {
    if (a == 0u) return 0u;
    int ea = int(a >> 23), eb = int(b >> 23);
    uint ma = a & 0x7fffffu, mb = b & 0x7fffffu;
    if (ea == 0) { // subnormal: normalize (value = m * 2^(e - 150) either way)
        const int s = 23 - findMSB(ma);
        ma <<= uint(s);
        ea = 1 - s;
    } else {
        ma |= 0x800000u;
    }
    if (eb == 0) {
        const int s = 23 - findMSB(mb);
        mb <<= uint(s);
        eb = 1 - s;
    } else {
        mb |= 0x800000u;
    }
    int e = ea - eb + 127; // the biased exponent of ma / mb in [1, 2)
    if (ma < mb) {
        ma <<= 1;
        --e;
    }
    uint q = 0u, rem = ma;
    for (int i = 0; i < 26; ++i) { // q = floor(ma / mb * 2^25), in [2^25, 2^26)
        q <<= 1;
        if (rem >= mb) {
            rem -= mb;
            q |= 1u;
        }
        rem <<= 1;
    }
    // 24 bits for a normal result, fewer for a subnormal one; the rest rounds.
    const int shift = e >= 1 ? 2 : 3 - e;
    if (shift > 26) return 0u; // below half the smallest subnormal
    uint m = q >> uint(shift);
    const uint rest = q & ((1u << uint(shift)) - 1u), halfUnit = 1u << uint(shift - 1);
    if (rest > halfUnit || (rest == halfUnit && (rem != 0u || (m & 1u) != 0u))) ++m;
    if (e < 1) return m; // a subnormal (or, rounded up, the smallest normal)
    const uint bits = (uint(e - 1) << 23) + m; // the hidden bit adds 1 to the exponent; a carry, 1 more
    return bits >= 0x7f800000u ? 0x7f800000u : bits;
}

// The binary16 of the float with bits x, rounded to nearest even (quant::floatToHalf).
uint floatToHalfBits(uint x) {
    const uint sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u);
    if (absx >= 0x477ff000u) return sign | 0x7c00u;
    if (absx < 0x38800000u) {
        if (absx < 0x33000000u) return sign;
        const uint e = absx >> 23, m = (absx & 0x7fffffu) | 0x800000u, shift = 126u - e;
        uint q = m >> shift;
        const uint rem = m & ((1u << shift) - 1u), halfUnit = 1u << (shift - 1u);
        if (rem > halfUnit || (rem == halfUnit && (q & 1u) != 0u)) ++q;
        return sign | q;
    }
    uint h = (absx >> 13) - (112u << 10);
    const uint rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;
    return sign | h;
}

// Halfword `at` of the cache, written alone: its word's other half may be another block's.
void storeHalf(uint at, uint value) {
    const uint w = at >> 1, shift = (at & 1u) * 16u;
    atomicAnd(cache[w], ~(0xffffu << shift));
    atomicOr(cache[w], value << shift);
}

void main() {
    const uint blocks = p.rowSize / 32u;
    const uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (id >= p.n * blocks) return;
    const uint t = id / blocks, b = id % blocks, base = t * p.rowSize + b * 32u;
    float x[32];
    uint amax = 0u; // the bits of the largest finite |x| (ordered as the values)
    for (uint j = 0u; j < 32u; ++j) {
        x[j] = src[base + j];
        const uint a = floatBitsToUint(x[j]) & 0x7fffffffu;
        if (a < 0x7f800000u) amax = max(amax, a);
    }
    const uint d = divideExact(amax, 0x42fe0000u); // amax / 127.0
    const float inv = d != 0u ? uintBitsToFloat(divideExact(0x3f800000u, d)) : 0.0;
    uint h[17]; // the block's 34 bytes as halfwords: d, then the quants in pairs
    h[0] = floatToHalfBits(d);
    for (uint j = 0u; j < 32u; j += 2u) {
        uint pair = 0u;
        for (uint k = 0u; k < 2u; ++k) {
            // quant::roundToInt: 0 for a value not finite or a product beyond 2e9 (or NaN, by
            // its bits); a product and a sum each rounded, never fused.
            precise float v = x[j + k] * inv;
            const bool inRange = (floatBitsToUint(x[j + k]) & 0x7fffffffu) < 0x7f800000u &&
                                 (floatBitsToUint(v) & 0x7fffffffu) <= 0x4eee6b28u; // 2.0e9
            v = v >= 0.0 ? v + 0.5 : v - 0.5;
            const int q = inRange ? clamp(int(v), -127, 127) : 0;
            pair |= (uint(q) & 0xffu) << (8u * k);
        }
        h[1u + j / 2u] = pair;
    }
    // Halfword 17 * (slot * blocks + b) of the cache onwards; whole words between the ends.
    const uint first = 17u * (uint(slots[t]) * blocks + b);
    uint k = 0u;
    if ((first & 1u) != 0u) storeHalf(first, h[k++]);
    for (; k + 1u < 17u; k += 2u) cache[(first + k) >> 1] = h[k] | (h[k + 1u] << 16);
    if (k < 17u) storeHalf(first + k, h[k]);
}
#else
void main() {
    const uint pairs = p.rowSize / 2u;
    const uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (id >= p.n * pairs) return;
    const uint t = id / pairs, j = id % pairs;
    const uint dst = uint(slots[t]) * p.rowSize + 2u * j;
    const float v0 = src[t * p.rowSize + 2u * j], v1 = src[t * p.rowSize + 2u * j + 1u];
#if defined(KV_F32)
    cache[dst] = v0;
    cache[dst + 1u] = v1;
#else
    cache[dst >> 1] = packHalf2x16(vec2(v0, v1));
#endif
}
#endif
