// Decode matrix-vector: y[t][rowOffset + r] = W[r] . x[t] for each row r of the bound range and
// each token t, dequantizing W on the fly. Without SUBGROUP: one workgroup per (row, token), summed
// in shared memory. With SUBGROUP: one workgroup per ROWS rows for every token (up to 8), each
// subgroup summing whole rows with subgroupAdd (no barriers: CPU implementations such as lavapipe
// run barriers as coroutine switches, which made a 32000-row output projection cost 100 ms there);
// quantized rows are read a chunk of 32 per lane, the block's scales once (dqChunk), and each
// value serves every token.
#version 450
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#define W_BINDING 0
#define GRID_BINDING 3
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n][cols]
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][totalRows]

#ifdef SUBGROUP
const uint ROWS = 8u;      // rows per workgroup (vk_device.cpp: kMatvecRows)
const uint MAX_TOKENS = 8u; // tokens per dispatch (vk_device.cpp: matMul's matvec range)

void main() {
    const uint lane = gl_SubgroupInvocationID;
    for (uint k = gl_SubgroupID; k < ROWS; k += gl_NumSubgroups) {
        const uint r = gl_WorkGroupID.x * ROWS + k;
        if (r >= p.nRows) break;
        const uint rowBase = p.byteBase + r * p.rowBytes;
        // Every token's sum for this row: each weight is dequantized once for all of them.
        float acc[MAX_TOKENS];
        for (uint t = 0u; t < MAX_TOKENS; ++t) acc[t] = 0.0;
#ifdef DQ_CHUNK
        // Lane by lane through the row's chunks of 32 (adjacent lanes read adjacent blocks).
        for (uint c = lane; c < p.cols / 32u; c += gl_SubgroupSize) {
            float v[32];
            dqChunk(rowBase, c, v);
            for (uint t = 0u; t < MAX_TOKENS; ++t) {
                if (t >= p.n) break;
                const uint xb = t * p.cols + 32u * c;
                float s = 0.0;
                for (uint j = 0u; j < 32u; ++j) s += v[j] * x[xb + j];
                acc[t] += s;
            }
        }
#else
        for (uint i = lane; i < p.cols; i += gl_SubgroupSize) {
            const float wv = dq(rowBase, i);
            for (uint t = 0u; t < MAX_TOKENS; ++t) {
                if (t >= p.n) break;
                acc[t] += wv * x[t * p.cols + i];
            }
        }
#endif
        for (uint t = 0u; t < MAX_TOKENS; ++t) {
            if (t >= p.n) break;
            const float sum = subgroupAdd(acc[t]);
            if (subgroupElect()) y[t * p.totalRows + p.rowOffset + r] = sum;
        }
    }
}
#else
shared float partial[64];

void main() {
    const uint r = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    if (r >= p.nRows) return;
    const uint rowBase = p.byteBase + r * p.rowBytes;
    float acc = 0.0;
    for (uint i = tid; i < p.cols; i += 64u) acc += dq(rowBase, i) * x[t * p.cols + i];
    partial[tid] = acc;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        barrier();
    }
    if (tid == 0u) y[t * p.totalRows + p.rowOffset + r] = partial[0];
}
#endif
