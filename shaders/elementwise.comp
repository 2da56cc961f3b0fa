// Element-wise ops over `count` values. OP_ADD: out[i] = a[i] + b[i % bLen] (residual add with
// bLen = count, bias add with bLen = row length). OP_SWIGLU: out[i] = silu(a[i]) * b[i].
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer Out { float o[]; };
layout(push_constant) uniform Params { uint count; uint bLen; } p;

void main() {
    const uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
#if defined(OP_ADD)
        o[i] = a[i] + b[i % p.bLen];
#elif defined(OP_SWIGLU)
        const float g = a[i];
        o[i] = g / (1.0 + exp(-g)) * b[i];
#else
#error "define OP_ADD or OP_SWIGLU"
#endif
    }
}
