// Concat of two contiguous tensors along one dimension, seen as blocks: with inner the product of
// the extents below the joined dimension, a is `outer` blocks of aBlock = a.ne[dim] * inner values,
// b `outer` blocks of bBlock values, and output block o is a's block o followed by b's. One
// invocation per output value (i = (x + y * numGroups.x) * 256 + local index).
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };    // [outer][aBlock]
layout(std430, binding = 1) readonly buffer B { float b[]; };    // [outer][bBlock]
layout(std430, binding = 2) writeonly buffer Out { float o[]; }; // [outer][aBlock + bBlock]
layout(push_constant) uniform Params { uint aBlock; uint bBlock; uint count; } p;

void main() {
    const uint i = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 256u + gl_LocalInvocationID.x;
    if (i >= p.count) return;
    const uint row = p.aBlock + p.bBlock, block = i / row, j = i - block * row;
    o[i] = j < p.aBlock ? a[block * p.aBlock + j] : b[block * p.bBlock + (j - p.aBlock)];
}
