// Mixture-of-experts matrix-vector (mat_mul_id): y[t][e][r] = W[ids[t][e]][r] . x[t][e or 0] for
// each row r of an expert, slot e and token t (one workgroup each, t = z), reading only the chosen
// experts' rows. The experts are stacked as one matrix of nExp * rows rows, bound one row range at
// a time: rows outside the bound range are skipped (the host's range loop covers them).
// With SUBGROUP, a workgroup takes ROWS rows of one (slot, token), each subgroup summing whole rows
// with subgroupAdd (no barriers; see matvec.comp), quantized rows a chunk of 32 per lane.
#version 450
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#define W_BINDING 0
#define GRID_BINDING 4
#include "dequant.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };   // [n][xSlots][cols]
layout(std430, binding = 2) readonly buffer Ids { int ids[]; }; // [n][k]
layout(std430, binding = 3) writeonly buffer Y { float y[]; };  // [n][k][rows]
layout(push_constant) uniform Params {
    uint cols;      // elements per row (and per x row)
    uint rowBytes;  // bytes per W row
    uint byteBase;  // offset of the bound range's first row inside it
    uint rowOffset; // index of that row in the stacked matrix
    uint nRows;     // rows in this range
    uint rows;      // rows per expert (y row length)
    uint k;         // experts per token
    uint xSlots;    // x rows per token: 1 (shared by the k experts) or k
} p;

#ifdef SUBGROUP
const uint ROWS = 8u; // rows per workgroup (vk_device.cpp: kMatvecRows)

void main() {
    const uint e = gl_WorkGroupID.y, t = gl_WorkGroupID.z, lane = gl_SubgroupInvocationID;
    const int id = ids[t * p.k + e];
    if (id < 0) return;
    const uint xBase = (t * p.xSlots + (p.xSlots == 1u ? 0u : e)) * p.cols;
    for (uint j = gl_SubgroupID; j < ROWS; j += gl_NumSubgroups) {
        const uint r = gl_WorkGroupID.x * ROWS + j;
        if (r >= p.rows) break;
        const uint g = uint(id) * p.rows + r; // the row in the stacked matrix
        if (g < p.rowOffset || g >= p.rowOffset + p.nRows) continue;
        const uint rowBase = p.byteBase + (g - p.rowOffset) * p.rowBytes;
        float acc = 0.0;
#ifdef DQ_CHUNK
        // A chunk of 32 per lane, the block's scales read once (matvec.comp).
        for (uint c = lane; c < p.cols / 32u; c += gl_SubgroupSize) {
            float v[32];
            dqChunk(rowBase, c, v);
            float s = 0.0;
            for (uint jj = 0u; jj < 32u; ++jj) s += v[jj] * x[xBase + 32u * c + jj];
            acc += s;
        }
#else
        for (uint i = lane; i < p.cols; i += gl_SubgroupSize) acc += dq(rowBase, i) * x[xBase + i];
#endif
        acc = subgroupAdd(acc);
        if (subgroupElect()) y[(t * p.k + e) * p.rows + r] = acc;
    }
}
#else
shared float partial[64];

void main() {
    const uint r = gl_WorkGroupID.x, e = gl_WorkGroupID.y, t = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
    const int id = ids[t * p.k + e];
    if (id < 0) return;
    const uint g = uint(id) * p.rows + r; // the row in the stacked matrix
    if (g < p.rowOffset || g >= p.rowOffset + p.nRows) return;
    const uint rowBase = p.byteBase + (g - p.rowOffset) * p.rowBytes;
    const uint xBase = (t * p.xSlots + (p.xSlots == 1u ? 0u : e)) * p.cols;
    float acc = 0.0;
    for (uint i = tid; i < p.cols; i += 64u) acc += dq(rowBase, i) * x[xBase + i];
    partial[tid] = acc;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        barrier();
    }
    if (tid == 0u) y[(t * p.k + e) * p.rows + r] = partial[0];
}
#endif
