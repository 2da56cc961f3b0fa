// Strided copy: rows of a view made contiguous, out[i] = x[offset + (i / width) * stride + i % width]
// (a column slice of each row, or rows at an offset), one invocation per output value
// (i = x + y * numGroups.x * 64).
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };    // the view's whole source
layout(std430, binding = 1) writeonly buffer Out { float o[]; }; // [rows][width]
layout(push_constant) uniform Params { uint count; uint width; uint stride; uint offset; } p;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (i >= p.count) return;
    o[i] = x[p.offset + (i / p.width) * p.stride + i % p.width];
}
