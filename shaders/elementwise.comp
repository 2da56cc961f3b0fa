// Element-wise ops over `count` values, one define per variant. Two inputs: OP_ADD / OP_MUL:
// out[i] = a[i] op b[i % bLen] (residual add with bLen = count, bias add / per-column scale with
// bLen = row length); OP_SWIGLU: out[i] = silu(a[i]) * b[i]; OP_GEGLU: out[i] = gelu(a[i]) * b[i];
// OP_SWIGLU_OAI (gpt-oss, alpha = param, limit = param2): g = min(a[i], limit), u = clamp(b[i],
// -limit, limit), out[i] = g * sigmoid(alpha * g) * (u + 1).
// One input (b unused): OP_SCALE: a[i] * param; OP_SILU; OP_GELU; OP_SOFTCAP: param * tanh(a[i] /
// param); OP_SIGMOID: 1 / (1 + e^-x); OP_SOFTPLUS: ln(1 + e^x) (x itself above 20, e^x below -15,
// where the float results agree). GELU is the tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer Out { float o[]; };
layout(push_constant) uniform Params { uint count; uint bLen; float param; float param2; } p;

// tanh with its argument clamped where the float result is already +-1 (no inf / inf).
float safeTanh(float v) { return tanh(clamp(v, -15.0, 15.0)); }
float silu(float v) { return v / (1.0 + exp(-v)); }
float gelu(float v) { return 0.5 * v * (1.0 + safeTanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

void main() {
    const uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
#if defined(OP_ADD)
        o[i] = a[i] + b[i % p.bLen];
#elif defined(OP_MUL)
        o[i] = a[i] * b[i % p.bLen];
#elif defined(OP_SWIGLU)
        o[i] = silu(a[i]) * b[i];
#elif defined(OP_GEGLU)
        o[i] = gelu(a[i]) * b[i];
#elif defined(OP_SWIGLU_OAI)
        const float g = min(a[i], p.param2), u = clamp(b[i], -p.param2, p.param2);
        o[i] = g / (1.0 + exp(-p.param * g)) * (u + 1.0);
#elif defined(OP_SCALE)
        o[i] = a[i] * p.param;
#elif defined(OP_SILU)
        o[i] = silu(a[i]);
#elif defined(OP_GELU)
        o[i] = gelu(a[i]);
#elif defined(OP_SOFTCAP)
        o[i] = p.param * safeTanh(a[i] / p.param);
#elif defined(OP_SIGMOID)
        o[i] = 1.0 / (1.0 + exp(-a[i])); // exp overflowing to inf gives 0, as it should
#elif defined(OP_SOFTPLUS)
        const float v = a[i];
        o[i] = v > 20.0 ? v : (v < -15.0 ? exp(v) : log(1.0 + exp(v)));
#else
#error "define one OP_*"
#endif
    }
}
