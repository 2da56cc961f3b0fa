// Embedding lookup: out[t][cols] = W[ids[t]] dequantized, one workgroup per token. The bound
// range starts at the row of `rowOffset` (ids below it are skipped by the host's range loop).
#version 450
#define W_BINDING 0
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };  // [n]
layout(std430, binding = 2) writeonly buffer Out { float o[]; }; // [n][cols]

void main() {
    const uint t = gl_WorkGroupID.x;
    const int id = ids[t];
    if (id < int(p.rowOffset) || id >= int(p.rowOffset + p.nRows)) return;
    const uint rowBase = p.byteBase + (uint(id) - p.rowOffset) * p.rowBytes;
    for (uint i = gl_LocalInvocationID.x; i < p.cols; i += 64u) o[t * p.cols + i] = dq(rowBase, i);
}
