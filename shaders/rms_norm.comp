// RMSNorm of each row: out[r][i] = x[r][i] / sqrt(mean(x[r]^2) + eps) (* weight[i] when
// hasWeight), one workgroup per row (rows may be tokens, or heads when normalizing Q/K per head;
// the row index is x + y * numGroups.x). out may alias x. GATED (rms_norm_gated, qwen3.5's
// delta-net output): also times silu(z[r][i]), z of x's shape, and the weight always given.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float weight[]; };
layout(std430, binding = 2) buffer Out { float o[]; };
#ifdef GATED
layout(std430, binding = 3) readonly buffer Z { float z[]; };
#endif
layout(push_constant) uniform Params { uint dim; uint nRows; float eps; uint hasWeight; } p;

shared float partial[64];

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, tid = gl_LocalInvocationID.x;
    if (r >= p.nRows) return; // the whole workgroup
    float ss = 0.0;
    for (uint i = tid; i < p.dim; i += 64u) ss += x[r * p.dim + i] * x[r * p.dim + i];
    partial[tid] = ss;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        barrier();
    }
    const float scale = inversesqrt(partial[0] / float(p.dim) + p.eps);
    for (uint i = tid; i < p.dim; i += 64u) {
#ifdef GATED
        const float zv = z[r * p.dim + i];
        o[r * p.dim + i] = x[r * p.dim + i] * scale * weight[i] * (zv / (1.0 + exp(-zv)));
#else
        o[r * p.dim + i] = x[r * p.dim + i] * scale * (p.hasWeight != 0u ? weight[i] : 1.0);
#endif
    }
}
