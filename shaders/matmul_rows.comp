// Matrix products for CPU implementations of Vulkan (lavapipe): y[t][rowOffset + r] = W[r] . x[t]
// with each invocation owning one row and up to TT tokens. There a subgroup is one SIMD register
// of lanes and every storage-buffer or shared-memory load whose address differs between lanes
// runs as a loop over them, so this form keeps loads few (row_products.glsl): no shared memory and
// no barriers. Quantized types only (those with a chunk reader). Needs subgroups of at least 8
// lanes with ballot (vk_device.cpp chooses it).
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

#define TT 32u // tokens per workgroup (vk_device.cpp: kRowsTileTokens)
const uint TR = 64u; // rows per workgroup (vk_device.cpp: kRowsTileRows)

#include "row_products.glsl"

void main() {
    const uint r = gl_WorkGroupID.x * TR + gl_LocalInvocationID.x, t0 = gl_WorkGroupID.y * TT;
    const uint nt = min(TT, p.n - t0);
    // Lanes past the last row read the last row (every lane takes part in the broadcasts) and
    // store nothing.
    const uint rowBase = p.byteBase + min(r, p.nRows - 1u) * p.rowBytes;
    uint xRow[TT];
    float acc[TT];
    for (uint t = 0u; t < TT; ++t) acc[t] = 0.0, xRow[t] = t0 + t;
    rowProducts(rowBase, xRow, nt, acc);
    if (r < p.nRows)
        for (uint t = 0u; t < TT; ++t) {
            if (t >= nt) break;
            y[(t0 + t) * p.totalRows + p.rowOffset + r] = acc[t];
        }
}
