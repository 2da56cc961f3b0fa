// RoPE in place over x[n][nHeads][headDim]: one invocation per (token, head, pair). Normal pairing
// rotates (2i, 2i+1), NeoX (i, i + nRot/2); only the first nRot dims rotate; optional frequency
// factors divide each pair's angle (llama3).
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer Freq { float freq[]; };
layout(push_constant) uniform Params {
    uint n; uint nHeads; uint headDim; uint nRot; float base; uint neox; uint nFreq;
} p;

void main() {
    const uint half_ = p.nRot / 2u;
    const uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (id >= p.n * p.nHeads * half_) return;
    const uint i = id % half_, h = (id / half_) % p.nHeads, t = id / (half_ * p.nHeads);
    float theta = float(pos[t]) * exp2(-2.0 * float(i) / float(p.nRot) * log2(p.base));
    if (i < p.nFreq) theta /= freq[i];
    const float c = cos(theta), s = sin(theta);
    const uint base = (t * p.nHeads + h) * p.headDim;
    const uint a = base + (p.neox != 0u ? i : 2u * i), b = base + (p.neox != 0u ? i + half_ : 2u * i + 1u);
    const float x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
}
