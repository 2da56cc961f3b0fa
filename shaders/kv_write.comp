// Writes src[n][rowSize] into a paged K or V cache at each token's slot: cache[slot][rowSize],
// one invocation per pair of values (rowSize is even).
#version 450
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) readonly buffer Slots { int slots[]; };
layout(std430, binding = 2) writeonly buffer Cache { KV_WORD cache[]; };
layout(push_constant) uniform Params { uint n; uint rowSize; } p;

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
