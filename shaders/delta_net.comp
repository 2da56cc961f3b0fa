// The gated delta rule of hybrid models (graph Op::DeltaNet) for heads of HEAD (a power of two)
// values. qkv [n][(2Hk + Hv)·S]: Hk q heads, Hk k heads, Hv v heads per token; v head h reads q/k
// head h % Hk. g, beta [n][Hv]; the state pool [slots][Hv][S][S] (row i: value dim, column j: key
// dim); out [n][Hv][S]. Per token and head, with q and k L2-normalized (x / sqrt(Σx² + eps), q
// also times 1/sqrt(S)):  M ← e^g·M;  M += beta·(v − M·k)·kᵀ;  out = M·q.
// One workgroup per (v head, run start token): workgroup row y = t returns at once unless token t
// starts a run (consecutive tokens with the same write slot in the StateInfo [n][3]). Invocation
// i keeps row i of the head's matrix in registers (its loops unrolled), loaded from the run's read
// slot (-1: zeros); q and k of each token are staged in shared memory and their norms reduced
// there. A token with a snapshot slot >= 0 copies the rows there; the run stores them in its write
// slot at its end.
// Slots outside [0, nSlots) are neither read (zeros) nor written.
#version 450
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = HEAD) in;
layout(std430, binding = 0) readonly buffer Qkv { float qkv[]; };
layout(std430, binding = 1) readonly buffer G { float gate[]; };
layout(std430, binding = 2) readonly buffer Beta { float beta[]; };
layout(std430, binding = 3) buffer State { float state[]; };
layout(std430, binding = 4) readonly buffer Info { int info[]; };
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params { uint Hk; uint Hv; uint n; uint nSlots; float eps; } p;

const uint S = HEAD;
shared float qs[S], ks[S];  // this token's q and k head, as read
shared float sq[S], sk[S];  // the sums of their squares, reduced in place

bool validSlot(int s) { return s >= 0 && uint(s) < p.nSlots; }

void main() {
    const uint h = gl_WorkGroupID.x, t0 = gl_WorkGroupID.y, i = gl_LocalInvocationID.x;
    if (h >= p.Hv || t0 >= p.n) return; // the whole workgroup
    const int write = info[3u * t0 + 1u];
    if (t0 > 0u && info[3u * (t0 - 1u) + 1u] == write) return; // not the first token of its run
    const int read = info[3u * t0];
    const uint slotSize = p.Hv * S * S, rowAt = h * S * S + i * S; // row i of head h within a slot
    const uint hk = h % p.Hk, width = (2u * p.Hk + p.Hv) * S;
    const float qScale = inversesqrt(float(S));

    float m[S];
    const bool fromState = validSlot(read);
    [[unroll]] for (uint j = 0u; j < S; ++j)
        m[j] = fromState ? state[uint(read) * slotSize + rowAt + j] : 0.0;

    for (uint t = t0; t < p.n && info[3u * t + 1u] == write; ++t) {
        const uint at = t * width;
        const float q = qkv[at + hk * S + i], k = qkv[at + (p.Hk + hk) * S + i];
        const float v = qkv[at + (2u * p.Hk + h) * S + i];
        qs[i] = q;
        ks[i] = k;
        sq[i] = q * q;
        sk[i] = k * k;
        barrier();
        for (uint s = S / 2u; s > 0u; s >>= 1u) {
            if (i < s) {
                sq[i] += sq[i + s];
                sk[i] += sk[i + s];
            }
            barrier();
        }
        // The normalized q_j = qs[j]·qn and k_j = ks[j]·kn, folded into the sums below.
        const float qn = qScale * inversesqrt(sq[0] + p.eps), kn = inversesqrt(sk[0] + p.eps);
        const float decay = exp(gate[t * p.Hv + h]), b = beta[t * p.Hv + h];
        float mk = 0.0;
        [[unroll]] for (uint j = 0u; j < S; ++j) {
            m[j] *= decay;
            mk += m[j] * ks[j];
        }
        const float d = b * (v - mk * kn) * kn; // beta·(v_i − (M·k)_i), times kn for ks
        float acc = 0.0;
        [[unroll]] for (uint j = 0u; j < S; ++j) {
            m[j] += d * ks[j];
            acc += m[j] * qs[j];
        }
        o[(t * p.Hv + h) * S + i] = acc * qn;
        const int snap = info[3u * t + 2u];
        if (validSlot(snap))
            [[unroll]] for (uint j = 0u; j < S; ++j) state[uint(snap) * slotSize + rowAt + j] = m[j];
        barrier(); // every invocation has read qs, ks and the sums before the next token's
    }
    if (validSlot(write))
        [[unroll]] for (uint j = 0u; j < S; ++j) state[uint(write) * slotSize + rowAt + j] = m[j];
}
