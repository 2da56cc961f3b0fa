// RoPE of x[n][nHeads][headDim] into out (which may be x): one invocation per (token, head, pair
// of dims). Pairs below nRot/2 rotate (normal pairing (2i, 2i+1), NeoX (i, i + nRot/2)) by the
// angle pos * base^(-2i/nRot), divided by the pair's frequency factor when given (llama3) and
// times freqScale (linear scaling); the others copy the dims past nRot. The angle formula is
// engine/backend/cpu/rope_math.h's without YaRN.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer Freq { float freq[]; };
layout(std430, binding = 3) buffer Out { float o[]; };
layout(push_constant) uniform Params {
    uint n; uint nHeads; uint headDim; uint nRot; float base; uint neox; uint nFreq; float freqScale;
} p;

void main() {
    const uint half_ = p.nRot / 2u, pairs = p.headDim / 2u;
    const uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (id >= p.n * p.nHeads * pairs) return;
    const uint i = id % pairs, h = (id / pairs) % p.nHeads, t = id / (pairs * p.nHeads);
    const uint base = (t * p.nHeads + h) * p.headDim;
    if (i >= half_) {
        const uint d = base + p.nRot + 2u * (i - half_);
        const float x0 = x[d], x1 = x[d + 1u];
        o[d] = x0;
        o[d + 1u] = x1;
        return;
    }
    float theta = float(pos[t]) * exp2(-2.0 * float(i) / float(p.nRot) * log2(p.base));
    if (i < p.nFreq) theta /= freq[i];
    theta *= p.freqScale;
    const float c = cos(theta), s = sin(theta);
    const uint a = base + (p.neox != 0u ? i : 2u * i), b = base + (p.neox != 0u ? i + half_ : 2u * i + 1u);
    const float x0 = x[a], x1 = x[b];
    o[a] = x0 * c - x1 * s;
    o[b] = x0 * s + x1 * c;
}
