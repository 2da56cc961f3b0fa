// RoPE of x[n][nHeads][headDim] into out (which may be x): one invocation per (token, head, pair
// of dims). Pairs below nRot/2 rotate (normal pairing (2i, 2i+1), NeoX (i, i + nRot/2)) by the
// angle pos * base^(-2i/nRot), divided by the pair's frequency factor when given (llama3) and
// times freqScale (linear scaling), blended with the unscaled angle over YaRN's ramp [low, high]
// when ext != 0; the rotation's magnitude is YaRN's (1 without) times the attention temperature
// 1 + tempScale ln(1 + floor(pos / tempLength)) when set. The others copy the dims past nRot. The
// formulas are engine/backend/cpu/rope_math.h's (the host derives low, high and the magnitude).
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer Freq { float freq[]; };
layout(std430, binding = 3) buffer Out { float o[]; };
layout(push_constant) uniform Params {
    uint n; uint nHeads; uint headDim; uint nRot; float base; uint neox; uint nFreq; float freqScale;
    float ext; float low; float high; float magnitude; float tempScale; uint tempLength;
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
    const float interp = theta * p.freqScale;
    if (p.ext != 0.0) {
        const float y = (float(i) - p.low) / max(0.001, p.high - p.low);
        const float mix_ = (1.0 - clamp(y, 0.0, 1.0)) * p.ext;
        theta = interp * (1.0 - mix_) + theta * mix_;
    } else {
        theta = interp;
    }
    float magnitude = p.magnitude;
    if (p.tempScale != 0.0) magnitude *= 1.0 + p.tempScale * log(floor(float(pos[t]) / float(p.tempLength)) + 1.0);
    const float c = cos(theta) * magnitude, s = sin(theta) * magnitude;
    const uint a = base + (p.neox != 0u ? i : 2u * i), b = base + (p.neox != 0u ? i + half_ : 2u * i + 1u);
    const float x0 = x[a], x1 = x[b];
    o[a] = x0 * c - x1 * s;
    o[b] = x0 * s + x1 * c;
}
