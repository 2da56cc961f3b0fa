// Prefill matrix-matrix: y[t][rowOffset + r] = W[r] . x[t], tiled 64 rows x 32 tokens per
// workgroup: 32-wide slices of W (dequantized once per tile, a chunk of 32 per row by each
// invocation where the type has a chunk reader) and of x are staged in shared memory, k-major,
// so that neighbouring invocations read neighbouring tokens (one vector load on CPU
// implementations such as lavapipe, no bank conflicts on GPUs). 64 invocations, each keeping 8
// rows x 4 tokens of the tile in registers (rows lr + 8i, tokens lt + 8j): 12 shared loads per 32
// multiply-adds, and one barrier pair serves 1024 of them per invocation.
#version 450
#define W_BINDING 0
#define GRID_BINDING 3
#include "dequant.glsl"
#include "matmul_params.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer X { float x[]; };  // [n][cols]
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][totalRows]

const uint TR = 64u, TT = 32u, TK = 32u; // vk_device.cpp: kTileRows, kTileTokens
shared float ws[TK][TR + 1u]; // [k][row]
shared float xs[TK][TT + 1u]; // [k][token]

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * TR, t0 = gl_WorkGroupID.y * TT;
    const uint lr = tid % 8u, lt = tid / 8u;
    float acc[8][4];
    for (uint i = 0u; i < 8u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
    for (uint k0 = 0u; k0 < p.cols; k0 += TK) {
#ifdef DQ_CHUNK
        // Quantized rows are whole chunks: row r0 + tid's chunk k0 / 32, its scales read once.
        {
            const uint r = r0 + tid;
            float v[32];
            if (r < p.nRows) dqChunk(p.byteBase + r * p.rowBytes, k0 / 32u, v);
            else for (uint kk = 0u; kk < TK; ++kk) v[kk] = 0.0;
            for (uint kk = 0u; kk < TK; ++kk) ws[kk][tid] = v[kk];
        }
#else
        // 2048 weights per slice: 32 per invocation, neighbours along the row.
        for (uint e = tid; e < TR * TK; e += 64u) {
            const uint rr = e / TK, kk = e % TK, r = r0 + rr, k = k0 + kk;
            ws[kk][rr] = (r < p.nRows && k < p.cols) ? dq(p.byteBase + r * p.rowBytes, k) : 0.0;
        }
#endif
        // 1024 activations per slice: 16 per invocation, neighbours along x's row.
        for (uint e = tid; e < TT * TK; e += 64u) {
            const uint tt = e / TK, kk = e % TK, t = t0 + tt, k = k0 + kk;
            xs[kk][tt] = (t < p.n && k < p.cols) ? x[t * p.cols + k] : 0.0;
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
            const uint r = r0 + lr + 8u * i, t = t0 + lt + 8u * j;
            if (r < p.nRows && t < p.n) y[t * p.totalRows + p.rowOffset + r] = acc[i][j];
        }
}
