// Matrix products for CPU implementations of Vulkan (lavapipe): y[t][rowOffset + r] = W[r] . x[t]
// with each invocation owning NR rows (r, r + 64, ...) and up to TT tokens: every activation it
// hands between lanes feeds NR rows. There a subgroup is one SIMD register
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

// NR rows per invocation and TT tokens per workgroup, per type and form as shaders/CMakeLists.txt
// builds them: prefill (matmul_rows_*, TT 32) and decode or short matrices (matvec_rows_*, TT 8);
// vk_device.cpp's rowsTile() says the same.
#ifndef NR
#define NR 16u
#endif
#ifndef TT
#define TT 32u
#endif
const uint TR = 64u * NR; // rows per workgroup

#include "row_products.glsl"

void main() {
    const uint r = gl_WorkGroupID.x * TR + gl_LocalInvocationID.x, t0 = gl_WorkGroupID.y * TT;
    const uint nt = min(TT, p.n - t0);
    // The invocation's rows r, r + 64, ...; lanes past the last row read the last row (every lane
    // takes part in the broadcasts) and store nothing.
    uint rowBase[NR];
    for (uint i = 0u; i < NR; ++i) rowBase[i] = p.byteBase + min(r + 64u * i, p.nRows - 1u) * p.rowBytes;
    uint xRow[TT];
    float acc[NR][TT];
    for (uint t = 0u; t < TT; ++t) {
        xRow[t] = t0 + t;
        for (uint i = 0u; i < NR; ++i) acc[i][t] = 0.0;
    }
    rowProductsN(rowBase, xRow, nt, acc);
    for (uint i = 0u; i < NR; ++i) {
        if (r + 64u * i >= p.nRows) break;
        for (uint t = 0u; t < TT; ++t) {
            if (t >= nt) break;
            y[(t0 + t) * p.totalRows + p.rowOffset + r + 64u * i] = acc[i][t];
        }
    }
}
