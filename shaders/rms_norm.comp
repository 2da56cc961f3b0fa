// RMSNorm of each row: out[r][i] = x[r][i] / sqrt(mean(x[r]^2) + eps) (* weight[i] when
// hasWeight), one workgroup per row (rows may be tokens, or heads when normalizing Q/K per head;
// the row index is x + y * numGroups.x). out may alias x.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float weight[]; };
layout(std430, binding = 2) buffer Out { float o[]; };
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
    for (uint i = tid; i < p.dim; i += 64u)
        o[r * p.dim + i] = x[r * p.dim + i] * scale * (p.hasWeight != 0u ? weight[i] : 1.0);
}
