// Decode matrix-vector: y[t][rowOffset + r] = W[r] . x[t] for each row r of the bound range and
// each token t, dequantizing W on the fly. Without SUBGROUP: one workgroup per (row, token), summed
// in shared memory. With SUBGROUP: one workgroup per (ROWS rows, token), each subgroup summing
// whole rows with subgroupAdd (no barriers: CPU implementations such as lavapipe run barriers as
// coroutine switches, which made a 32000-row output projection cost 100 ms there).
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
const uint ROWS = 8u; // rows per workgroup (vk_device.cpp: kMatvecRows)

void main() {
    const uint t = gl_WorkGroupID.y, lane = gl_SubgroupInvocationID;
    for (uint k = gl_SubgroupID; k < ROWS; k += gl_NumSubgroups) {
        const uint r = gl_WorkGroupID.x * ROWS + k;
        if (r >= p.nRows) break;
        const uint rowBase = p.byteBase + r * p.rowBytes;
        float acc = 0.0;
        for (uint i = lane; i < p.cols; i += gl_SubgroupSize) acc += dq(rowBase, i) * x[t * p.cols + i];
        acc = subgroupAdd(acc);
        if (subgroupElect()) y[t * p.totalRows + p.rowOffset + r] = acc;
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
