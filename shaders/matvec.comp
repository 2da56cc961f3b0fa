// Decode matrix-vector: y[t][rowOffset + r] = W[r] . x[t] for each row r of the bound range and
// each token t (one workgroup per (row, token)), dequantizing W on the fly.
#version 450
#define W_BINDING 0
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n][cols]
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][totalRows]

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
