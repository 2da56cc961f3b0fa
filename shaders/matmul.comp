// Prefill matrix-matrix: y[t][rowOffset + r] = W[r] . x[t], tiled 16 rows x 16 tokens per
// workgroup, with 32-wide slices of W (dequantized once per tile) and x staged in shared memory.
#version 450
#define W_BINDING 0
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n][cols]
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][totalRows]

const uint TR = 16u, TT = 16u, TK = 32u;
shared float ws[TR][TK + 1u];
shared float xs[TT][TK + 1u];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * TR, t0 = gl_WorkGroupID.y * TT;
    const uint lr = tid / TT, lt = tid % TT;
    float acc = 0.0;
    for (uint k0 = 0u; k0 < p.cols; k0 += TK) {
        // 512 values of each tile, two per invocation.
        for (uint e = tid; e < TR * TK; e += 256u) {
            const uint rr = e / TK, kk = e % TK, r = r0 + rr, k = k0 + kk;
            ws[rr][kk] = (r < p.nRows && k < p.cols) ? dq(p.byteBase + r * p.rowBytes, k) : 0.0;
            const uint tt = e / TK, t = t0 + tt;
            xs[tt][kk] = (t < p.n && k < p.cols) ? x[t * p.cols + k] : 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < TK; ++kk) acc += ws[lr][kk] * xs[lt][kk];
        barrier();
    }
    const uint r = r0 + lr, t = t0 + lt;
    if (r < p.nRows && t < p.n) y[t * p.totalRows + p.rowOffset + r] = acc;
}
