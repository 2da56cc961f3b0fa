// Prefill mixture-of-experts matrix-matrix (mat_mul_id for many tokens): the workgroup (x, y, e)
// multiplies rows [64x, 64x + 64) of expert e by x rows of the 32 pairs [32y, 32y + 32) among
// those that chose e (moe_route.comp's table), tiled as matmul.comp so that each weight tile is
// dequantized once per 32 pairs; a workgroup takes the tiles y, y + numGroups.y, ... (an expert
// chosen twice by a token has more pairs than tokens). The experts are stacked as one matrix bound
// a row range at a time: rows outside the bound range are left to the host's range loop.
#version 450
#define W_BINDING 0
#define GRID_BINDING 4
#include "dequant.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };       // [n][xSlots][cols]
layout(std430, binding = 2) readonly buffer Route { uint route[]; }; // moe_route.comp's table
layout(std430, binding = 3) writeonly buffer Y { float y[]; };      // [n][k][rows]
layout(push_constant) uniform Params {
    uint cols, rowBytes, byteBase, rowOffset, nRows; // as matvec_id.comp
    uint rows;                                       // rows per expert
    uint k;                                          // experts per token
    uint xSlots;                                     // x rows per token: 1 or k
} p;

const uint TR = 64u, TT = 32u, TK = 16u; // as matmul.comp
shared float ws[TR][TK + 1u];
shared float xs[TT][TK + 1u];
shared uint pairOf[TT];

void main() {
    const uint tid = gl_LocalInvocationID.x, nExp = gl_NumWorkGroups.z, e = gl_WorkGroupID.z;
    const uint count = route[e], r0 = gl_WorkGroupID.x * TR, lr = tid / 16u, lt = tid % 16u;
    for (uint first = gl_WorkGroupID.y * TT; first < count; first += gl_NumWorkGroups.y * TT) {
        const uint pairs = min(TT, count - first);
        if (tid < TT) pairOf[tid] = tid < pairs ? route[2u * nExp + route[nExp + e] + first + tid] : 0u;
        barrier();
        float acc[4][2];
        for (uint i = 0u; i < 4u; ++i) acc[i][0] = acc[i][1] = 0.0;
        for (uint k0 = 0u; k0 < p.cols; k0 += TK) {
            for (uint i = tid; i < TR * TK; i += 256u) {
                const uint rr = i / TK, kk = i % TK, r = r0 + rr, c = k0 + kk, g = e * p.rows + r;
                const bool inRange = r < p.rows && g >= p.rowOffset && g < p.rowOffset + p.nRows;
                ws[rr][kk] = inRange && c < p.cols ? dq(p.byteBase + (g - p.rowOffset) * p.rowBytes, c) : 0.0;
            }
            for (uint i = tid; i < TT * TK; i += 256u) {
                const uint tt = i / TK, kk = i % TK, c = k0 + kk, pair = pairOf[tt];
                const uint xRow = (pair / p.k) * p.xSlots + (p.xSlots == 1u ? 0u : pair % p.k);
                xs[tt][kk] = tt < pairs && c < p.cols ? x[xRow * p.cols + c] : 0.0;
            }
            barrier();
            for (uint kk = 0u; kk < TK; ++kk) {
                const float x0 = xs[lt][kk], x1 = xs[lt + 16u][kk];
                for (uint i = 0u; i < 4u; ++i) {
                    const float wv = ws[lr + 16u * i][kk];
                    acc[i][0] += wv * x0;
                    acc[i][1] += wv * x1;
                }
            }
            barrier();
        }
        for (uint i = 0u; i < 4u; ++i)
            for (uint j = 0u; j < 2u; ++j) {
                const uint r = r0 + lr + 16u * i, g = e * p.rows + r, pt = lt + 16u * j;
                if (r < p.rows && pt < pairs && g >= p.rowOffset && g < p.rowOffset + p.nRows)
                    y[pairOf[pt] * p.rows + r] = acc[i][j];
            }
        barrier(); // pairOf is rewritten for the next tile
    }
}
