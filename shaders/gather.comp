// Router gather: out[r][e] = x[r][ids[r][e]] (the chosen experts' logits or probabilities), one
// invocation per output value (i = x + y * numGroups.x * 64); an index outside the row gives 0.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };   // [rows][width]
layout(std430, binding = 1) readonly buffer Ids { int ids[]; }; // [rows][k]
layout(std430, binding = 2) writeonly buffer Out { float o[]; }; // [rows][k]
layout(push_constant) uniform Params { uint count; uint width; uint k; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (i >= p.count) return;
    const int id = ids[i];
    o[i] = id >= 0 && uint(id) < p.width ? x[(i / p.k) * p.width + uint(id)] : 0.0;
}
