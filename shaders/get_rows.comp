// Row lookup: out[t][cols] = W[ids[t]] dequantized (embeddings, or rows of an F32 activation),
// one workgroup per token (t = x + y * numGroups.x). The bound range starts at the row of
// `rowOffset` (ids outside it are skipped: the host's range loop covers them).
#version 450
#define W_BINDING 0
#define GRID_BINDING 3
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };  // [n]
layout(std430, binding = 2) writeonly buffer Out { float o[]; }; // [n][cols]

void main() {
    const uint t = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (t >= p.n) return;
    const int id = ids[t];
    if (id < int(p.rowOffset) || id >= int(p.rowOffset + p.nRows)) return;
    const uint rowBase = p.byteBase + (uint(id) - p.rowOffset) * p.rowBytes;
    for (uint i = gl_LocalInvocationID.x; i < p.cols; i += 64u) o[t * p.cols + i] = dq(rowBase, i);
}
