// Prefill mixture-of-experts matrix-matrix (mat_mul_id for many tokens): the workgroup (x, y, e)
// multiplies rows [64x, 64x + 64) of expert e by x rows of the 32 pairs [32y, 32y + 32) among
// those that chose e (moe_route.comp's table), tiled as matmul.comp (64 invocations of 8 rows x 4
// pairs, k-major 32-wide slices, a chunk of 32 dequantized per row) so that each weight tile is
// dequantized once per 32 pairs; a workgroup takes the tiles y, y + numGroups.y, ... (an expert
// chosen twice by a token has more pairs than tokens). The experts are stacked as one matrix bound
// a row range at a time: rows outside the bound range are left to the host's range loop.
#version 450
#define W_BINDING 0
#define GRID_BINDING 4
#include "dequant.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };       // [n][xSlots][cols]
layout(std430, binding = 2) readonly buffer Route { uint route[]; }; // moe_route.comp's table
layout(std430, binding = 3) writeonly buffer Y { float y[]; };      // [n][k][rows]
layout(push_constant) uniform Params {
    uint cols, rowBytes, byteBase, rowOffset, nRows; // as matvec_id.comp
    uint rows;                                       // rows per expert
    uint k;                                          // experts per token
    uint xSlots;                                     // x rows per token: 1 or k
} p;

const uint TR = 64u, TT = 32u, TK = 32u; // as matmul.comp
shared float ws[TK][TR + 1u]; // [k][row]
shared float xs[TK][TT + 1u]; // [k][pair]
shared uint pairOf[TT];

void main() {
    const uint tid = gl_LocalInvocationID.x, nExp = gl_NumWorkGroups.z, e = gl_WorkGroupID.z;
    const uint count = route[e], r0 = gl_WorkGroupID.x * TR, lr = tid % 8u, lt = tid / 8u;
    for (uint first = gl_WorkGroupID.y * TT; first < count; first += gl_NumWorkGroups.y * TT) {
        const uint pairs = min(TT, count - first);
        if (tid < TT) pairOf[tid] = tid < pairs ? route[2u * nExp + route[nExp + e] + first + tid] : 0u;
        barrier();
        float acc[8][4];
        for (uint i = 0u; i < 8u; ++i)
            for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
        for (uint k0 = 0u; k0 < p.cols; k0 += TK) {
#ifdef DQ_CHUNK
            {
                const uint r = r0 + tid, g = e * p.rows + r;
                const bool inRange = r < p.rows && g >= p.rowOffset && g < p.rowOffset + p.nRows;
                float v[32];
                if (inRange) dqChunk(p.byteBase + (g - p.rowOffset) * p.rowBytes, k0 / 32u, v);
                else for (uint kk = 0u; kk < TK; ++kk) v[kk] = 0.0;
                for (uint kk = 0u; kk < TK; ++kk) ws[kk][tid] = v[kk];
            }
#else
            for (uint i = tid; i < TR * TK; i += 64u) {
                const uint rr = i / TK, kk = i % TK, r = r0 + rr, c = k0 + kk, g = e * p.rows + r;
                const bool inRange = r < p.rows && g >= p.rowOffset && g < p.rowOffset + p.nRows;
                ws[kk][rr] = inRange && c < p.cols ? dq(p.byteBase + (g - p.rowOffset) * p.rowBytes, c) : 0.0;
            }
#endif
            for (uint i = tid; i < TT * TK; i += 64u) {
                const uint tt = i / TK, kk = i % TK, c = k0 + kk, pair = pairOf[tt];
                const uint xRow = (pair / p.k) * p.xSlots + (p.xSlots == 1u ? 0u : pair % p.k);
                xs[kk][tt] = tt < pairs && c < p.cols ? x[xRow * p.cols + c] : 0.0;
            }
            barrier();
            for (uint kk = 0u; kk < TK; ++kk) {
                float xv[4];
                for (uint j = 0u; j < 4u; ++j) xv[j] = xs[kk][lt + 8u * j];
                for (uint i = 0u; i < 8u; ++i) {
                    const float wv = ws[kk][lr + 8u * i];
                    for (uint j = 0u; j < 4u; ++j) acc[i][j] += wv * xv[j];
                }
            }
            barrier();
        }
        for (uint i = 0u; i < 8u; ++i)
            for (uint j = 0u; j < 4u; ++j) {
                const uint r = r0 + lr + 8u * i, g = e * p.rows + r, pt = lt + 8u * j;
                if (r < p.rows && pt < pairs && g >= p.rowOffset && g < p.rowOffset + p.nRows)
                    y[pairOf[pt] * p.rows + r] = acc[i][j];
            }
        barrier(); // pairOf is rewritten for the next tile
    }
}
