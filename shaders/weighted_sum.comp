// Expert mixing: out[t][j] = sum over e of w[t][e] * y[t][e][j], one invocation per output value
// (i = x + y * numGroups.x * 64).
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Y { float y[]; };    // [n][k][width]
layout(std430, binding = 1) readonly buffer W { float w[]; };    // [n][k]
layout(std430, binding = 2) writeonly buffer Out { float o[]; }; // [n][width]
layout(push_constant) uniform Params { uint count; uint width; uint k; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (i >= p.count) return;
    const uint t = i / p.width, j = i % p.width;
    float acc = 0.0;
    for (uint e = 0u; e < p.k; ++e) acc += w[t * p.k + e] * y[(t * p.k + e) * p.width + j];
    o[i] = acc;
}
