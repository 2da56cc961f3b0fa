// Row softmax: out[r] = softmax(x[r] * scale), one workgroup per row (r = x + y * numGroups.x),
// the maximum subtracted before exp; out may be x.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; }; // [rows][width]
layout(std430, binding = 1) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params { uint rows; uint width; float scale; } p;

shared float red[64];

// The sum (or maximum) of every invocation's v, in all of them.
float reduceSum(float v) {
    const uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}
float reduceMax(float v) {
    const uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] = max(red[tid], red[tid + s]);
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, tid = gl_LocalInvocationID.x;
    if (r >= p.rows) return;
    const uint base = r * p.width;
    float m = -3.402823466e38;
    for (uint i = tid; i < p.width; i += 64u) m = max(m, x[base + i] * p.scale);
    m = reduceMax(m);
    float s = 0.0;
    for (uint i = tid; i < p.width; i += 64u) s += exp(x[base + i] * p.scale - m);
    s = reduceSum(s);
    const float inv = 1.0 / s;
    for (uint i = tid; i < p.width; i += 64u) o[base + i] = exp(x[base + i] * p.scale - m) * inv;
}
