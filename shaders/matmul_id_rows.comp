// Mixture-of-experts products for CPU implementations of Vulkan (lavapipe), in matmul_rows.comp's
// form: the workgroup (x, y, e) gives each invocation NR rows of expert e (r, r + 64, ... of rows
// [64·NR·x, 64·NR·(x + 1)))
// and the pairs [32y, 32y + 32), [32(y + numGroups.y), ...) among those that chose e
// (moe_route.comp's table); the row is read a chunk of 32 at a time and each pair's 32 activations
// of the chunk reach every lane by subgroupBroadcast from the first 8. The experts are stacked as
// one matrix bound a row range at a time: rows outside the bound range are left to the host's
// range loop (lanes on them read a row inside it and store nothing). With DIRECT (decode: up to
// 8 tokens, no routing table) the workgroup (x, e, t) takes the one pair (token t, slot e) and reads
// its expert from ids.
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#define W_BINDING 0
#define GRID_BINDING 4
#include "dequant.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };       // [n][xSlots][cols]
#ifdef DIRECT
layout(std430, binding = 2) readonly buffer Ids { int ids[]; };      // [n][k]
#else
layout(std430, binding = 2) readonly buffer Route { uint route[]; }; // moe_route.comp's table
#endif
layout(std430, binding = 3) writeonly buffer Y { float y[]; };      // [n][k][rows]
layout(push_constant) uniform Params {
    uint cols, rowBytes, byteBase, rowOffset, nRows; // as matvec_id.comp
    uint rows;                                       // rows per expert
    uint k;                                          // experts per token
    uint xSlots;                                     // x rows per token: 1 or k
} p;

#ifndef TT
#define TT 32u // pairs per workgroup (DIRECT: 1)
#endif
// NR rows per invocation (r, r + 64, ...), per type and form as shaders/CMakeLists.txt builds them
// (vk_device.cpp's rowsTile()).
#ifndef NR
#define NR 2u
#endif
const uint TR = 64u * NR;

#include "row_products.glsl"

// The x row of pair (token t, slot e) = t * k + e.
uint xRowOf(uint pair) { return (pair / p.k) * p.xSlots + (p.xSlots == 1u ? 0u : pair % p.k); }

void main() {
    const uint r = gl_WorkGroupID.x * TR + gl_LocalInvocationID.x;
#ifdef DIRECT
    const uint pair = gl_WorkGroupID.z * p.k + gl_WorkGroupID.y;
    const int id = ids[pair];
    if (id < 0) return;
    const uint e = uint(id);
#else
    const uint nExp = gl_NumWorkGroups.z, e = gl_WorkGroupID.z;
#endif
    // The rows of expert e inside the bound range: [lo, hi) of the stacked matrix.
    const uint lo = max(e * p.rows, p.rowOffset), hi = min((e + 1u) * p.rows, p.rowOffset + p.nRows);
    if (lo >= hi) return; // the same for the whole workgroup
    uint rowBase[NR];
    bool mine[NR];
    for (uint i = 0u; i < NR; ++i) {
        const uint ri = r + 64u * i, g = e * p.rows + ri;
        mine[i] = ri < p.rows && g >= lo && g < hi;
        rowBase[i] = p.byteBase + (clamp(g, lo, hi - 1u) - p.rowOffset) * p.rowBytes;
    }
    uint xRow[TT];
    float acc[NR][TT];
    for (uint t = 0u; t < TT; ++t) {
        xRow[t] = 0u;
        for (uint i = 0u; i < NR; ++i) acc[i][t] = 0.0;
    }
#ifdef DIRECT
    xRow[0] = xRowOf(pair);
    rowProductsN(rowBase, xRow, 1u, acc);
    for (uint i = 0u; i < NR; ++i)
        if (mine[i]) y[pair * p.rows + r + 64u * i] = acc[i][0];
#else
    const uint count = route[e], start = 2u * nExp + route[nExp + e];
    for (uint first = gl_WorkGroupID.y * TT; first < count; first += gl_NumWorkGroups.y * TT) {
        const uint pairs = min(TT, count - first);
        for (uint t = 0u; t < TT; ++t) {
            for (uint i = 0u; i < NR; ++i) acc[i][t] = 0.0;
            xRow[t] = xRowOf(t < pairs ? route[start + first + t] : 0u);
        }
        rowProductsN(rowBase, xRow, pairs, acc);
        for (uint i = 0u; i < NR; ++i) {
            if (!mine[i]) continue;
            for (uint t = 0u; t < TT; ++t) {
                if (t >= pairs) break;
                y[route[start + first + t] * p.rows + r + 64u * i] = acc[i][t];
            }
        }
    }
#endif
}
