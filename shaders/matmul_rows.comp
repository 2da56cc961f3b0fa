// Matrix products for CPU implementations of Vulkan (lavapipe): y[t][rowOffset + r] = W[r] . x[t]
// with each invocation owning one row and up to TT tokens. There a subgroup is one SIMD register
// of lanes and every storage-buffer or shared-memory load whose address differs between lanes
// runs as a loop over them, so this form keeps loads few: an invocation reads its row a chunk of
// 32 at a time (dqChunk: a few words and the block's scales), the subgroup's first 8 lanes read a
// token's 32 activations of that chunk, 4 each, and subgroupBroadcast hands them to every lane
// (a register shuffle). No shared memory and no barriers. Quantized types only (those with a
// chunk reader). Needs subgroups of at least 8 lanes with ballot (vk_device.cpp chooses it).
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#define W_BINDING 0
#define GRID_BINDING 3
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n][cols]
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][totalRows]

const uint TR = 64u, TT = 32u; // rows x tokens per workgroup (vk_device.cpp: kRowsTileRows, kRowsTileTokens)

void main() {
    const uint r = gl_WorkGroupID.x * TR + gl_LocalInvocationID.x, t0 = gl_WorkGroupID.y * TT;
    const uint nt = min(TT, p.n - t0);
    const uint part = gl_SubgroupInvocationID & 7u;
    // Lanes past the last row read the last row (every lane must take part in the broadcasts)
    // and store nothing.
    const uint rowBase = p.byteBase + min(r, p.nRows - 1u) * p.rowBytes;
    float acc[TT];
    for (uint t = 0u; t < TT; ++t) acc[t] = 0.0;
    for (uint c = 0u; c < p.cols / 32u; ++c) {
        float v[32];
        dqChunk(rowBase, c, v);
        for (uint t = 0u; t < TT; ++t) {
            if (t >= nt) break;
            const uint xb = (t0 + t) * p.cols + 32u * c + 4u * part;
            const vec4 xq = vec4(x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u]);
            float s = 0.0;
            // Activations 4L..4L+3 of the chunk come from lane L.
#define HEARTH_STEP(L)                                                                              \
    {                                                                                               \
        const vec4 b = subgroupBroadcast(xq, L);                                                    \
        s += v[4u * L] * b.x + v[4u * L + 1u] * b.y + v[4u * L + 2u] * b.z + v[4u * L + 3u] * b.w;  \
    }
            HEARTH_STEP(0u) HEARTH_STEP(1u) HEARTH_STEP(2u) HEARTH_STEP(3u)
            HEARTH_STEP(4u) HEARTH_STEP(5u) HEARTH_STEP(6u) HEARTH_STEP(7u)
#undef HEARTH_STEP
            acc[t] += s;
        }
    }
    if (r < p.nRows)
        for (uint t = 0u; t < TT; ++t) {
            if (t >= nt) break;
            y[(t0 + t) * p.totalRows + p.rowOffset + r] = acc[t];
        }
}
