// The causal depth-wise convolution of hybrid models (graph Op::SsmConv): x [n][C] through
// w [C][K] over a rolling window of the last K inputs per channel, whose K - 1 earlier inputs
// come from the state pool [slots][K-1][C] (oldest first). The tokens form runs (consecutive
// tokens with the same write slot in the StateInfo [n][3]: read, write, snapshot slot); one
// invocation per (channel, run start token): a workgroup row y = t whose token does not start a
// run returns at once. A run loads the window from its read slot (-1: zeros), writes out[t][c]
// per token, copies the window to a token's snapshot slot (>= 0) and stores it in the write slot
// at its end. Slots outside [0, nSlots) are neither read (zeros) nor written. K <= KMAX.
#version 450
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer State { float state[]; };
layout(std430, binding = 3) readonly buffer Info { int info[]; };
layout(std430, binding = 4) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params { uint C; uint K; uint n; uint nSlots; } p;

const uint KMAX = 8;

bool validSlot(int s) { return s >= 0 && uint(s) < p.nSlots; }

void storeWindow(int slot, uint c, float win[KMAX]) {
    const uint row = (p.K - 1u) * p.C;
    [[unroll]] for (uint k = 0u; k + 1u < KMAX; ++k)
        if (k + 1u < p.K) state[uint(slot) * row + k * p.C + c] = win[k];
}

void main() {
    const uint c = gl_GlobalInvocationID.x, t0 = gl_WorkGroupID.y;
    if (c >= p.C || t0 >= p.n) return;
    const int write = info[3u * t0 + 1u];
    if (t0 > 0u && info[3u * (t0 - 1u) + 1u] == write) return; // not the first token of its run
    const int read = info[3u * t0];
    const uint row = (p.K - 1u) * p.C;
    // win[0 .. K-2]: the previous inputs, oldest first; wk: the taps on them; wLast on the current.
    float win[KMAX], wk[KMAX];
    [[unroll]] for (uint k = 0u; k < KMAX; ++k) {
        win[k] = k + 1u < p.K && validSlot(read) ? state[uint(read) * row + k * p.C + c] : 0.0;
        wk[k] = k + 1u < p.K ? w[c * p.K + k] : 0.0;
    }
    const float wLast = w[c * p.K + p.K - 1u];
    for (uint t = t0; t < p.n && info[3u * t + 1u] == write; ++t) {
        const float xt = x[t * p.C + c];
        float acc = 0.0;
        [[unroll]] for (uint k = 0u; k + 1u < KMAX; ++k)
            if (k + 1u < p.K) acc += wk[k] * win[k];
        o[t * p.C + c] = acc + wLast * xt;
        // Drop the oldest input, append this one.
        [[unroll]] for (uint k = 0u; k + 1u < KMAX; ++k) {
            if (k + 2u < p.K) win[k] = win[k + 1u];
            else if (k + 2u == p.K) win[k] = xt;
        }
        const int snap = info[3u * t + 2u];
        if (validSlot(snap)) storeWindow(snap, c, win);
    }
    if (validSlot(write)) storeWindow(write, c, win);
}
