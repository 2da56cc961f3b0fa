// Prefill matrix-matrix: y[t][rowOffset + r] = W[r] . x[t], tiled 64 rows x 32 tokens per
// workgroup: 16-wide slices of W (dequantized once per tile) and of x are staged in shared memory,
// and each invocation keeps 4 rows x 2 tokens of the tile in registers (rows lr + 16i, tokens
// lt + 16j), so that one barrier pair serves 128 multiply-adds per invocation.
#version 450
#define W_BINDING 0
#define GRID_BINDING 3
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n][cols]
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][totalRows]

const uint TR = 64u, TT = 32u, TK = 16u; // vk_device.cpp: kTileRows, kTileTokens
shared float ws[TR][TK + 1u];
shared float xs[TT][TK + 1u];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * TR, t0 = gl_WorkGroupID.y * TT;
    const uint lr = tid / 16u, lt = tid % 16u;
    float acc[4][2];
    for (uint i = 0u; i < 4u; ++i) acc[i][0] = acc[i][1] = 0.0;
    for (uint k0 = 0u; k0 < p.cols; k0 += TK) {
        // 1024 weights and 512 activations per slice: four and two per invocation.
        for (uint e = tid; e < TR * TK; e += 256u) {
            const uint rr = e / TK, kk = e % TK, r = r0 + rr, k = k0 + kk;
            ws[rr][kk] = (r < p.nRows && k < p.cols) ? dq(p.byteBase + r * p.rowBytes, k) : 0.0;
        }
        for (uint e = tid; e < TT * TK; e += 256u) {
            const uint tt = e / TK, kk = e % TK, t = t0 + tt, k = k0 + kk;
            xs[tt][kk] = (t < p.n && k < p.cols) ? x[t * p.cols + k] : 0.0;
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
            const uint r = r0 + lr + 16u * i, t = t0 + lt + 16u * j;
            if (r < p.nRows && t < p.n) y[t * p.totalRows + p.rowOffset + r] = acc[i][j];
        }
}
