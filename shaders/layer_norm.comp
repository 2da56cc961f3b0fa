// LayerNorm of each row: out[r][i] = (x[r][i] - mean) / sqrt(var + eps) (* weight[i] when
// hasWeight) (+ bias[i] when hasBias), the mean and the (biased) variance over the row's dim
// values taken in two passes as the CPU reference does: the sum first, then the squared distances
// from the mean. One workgroup per row (the row index is x + y * numGroups.x); out may alias x
// (each value is read and written by the same invocation).
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };    // [nRows][dim]
layout(std430, binding = 1) readonly buffer Wt { float weight[]; }; // [dim] when hasWeight
layout(std430, binding = 2) readonly buffer Bs { float bias[]; };   // [dim] when hasBias
layout(std430, binding = 3) buffer Out { float o[]; };             // [nRows][dim]
layout(push_constant) uniform Params { uint dim; uint nRows; float eps; uint hasWeight; uint hasBias; } p;

shared float partial[64];

// The sum of v over the workgroup (called by every invocation).
float workgroupSum(float v) {
    const uint tid = gl_LocalInvocationID.x;
    partial[tid] = v;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        barrier();
    }
    const float total = partial[0];
    barrier(); // read by all before partial is reused
    return total;
}

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, tid = gl_LocalInvocationID.x;
    if (r >= p.nRows) return; // the whole workgroup
    const uint base = r * p.dim;
    float s = 0.0;
    for (uint i = tid; i < p.dim; i += 64u) s += x[base + i];
    const float mean = workgroupSum(s) / float(p.dim);
    float ss = 0.0;
    for (uint i = tid; i < p.dim; i += 64u) {
        const float d = x[base + i] - mean;
        ss += d * d;
    }
    const float inv = 1.0 / sqrt(workgroupSum(ss) / float(p.dim) + p.eps);
    for (uint i = tid; i < p.dim; i += 64u) {
        float v = (x[base + i] - mean) * inv;
        if (p.hasWeight != 0u) v *= weight[i];
        if (p.hasBias != 0u) v += bias[i];
        o[base + i] = v;
    }
}
