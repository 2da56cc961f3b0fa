// Scalar reference of the recurrent ops: the causal convolution over a rolling window and the
// gated delta rule, one token after another, with the state read, snapshotted and stored as the
// step's StateInfo says (graph/graph.h, Op::SsmConv).
#include "backend/cpu/recurrent_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace hearth::cpu::ref {

std::vector<StateRun> stateRuns(const int32_t* info, int64_t n) {
    std::vector<StateRun> runs;
    for (int64_t t = 0; t < n; ++t) {
        const int32_t write = info[3 * t + 1];
        if (runs.empty() || runs.back().write != write) runs.push_back({t, t + 1, info[3 * t], write});
        else runs.back().end = t + 1;
    }
    return runs;
}

Status checkStateSlots(const char* op, const int32_t* info, int64_t n, int64_t slots) {
    for (int64_t t = 0; t < n; ++t)
        for (int c = 0; c < 3; ++c)
            if (info[3 * t + c] < (c == 1 ? 0 : -1) || info[3 * t + c] >= slots)
                return outOfRange(std::string(op) + ": state slot " + std::to_string(info[3 * t + c]) + " outside [0, " +
                                  std::to_string(slots) + ")");
    return Status::ok();
}

void ssmConv(const float* x, const float* w, float* state, const int32_t* info, float* out, int64_t n, int64_t C,
             int64_t K) {
    const int64_t row = (K - 1) * C;
    std::vector<float> window(static_cast<size_t>(K * C)); // [K][C]: the last K inputs, oldest first
    for (const StateRun& run : stateRuns(info, n)) {
        if (run.read >= 0) std::memcpy(window.data(), state + int64_t(run.read) * row, size_t(row) * 4);
        else std::fill(window.begin(), window.begin() + row, 0.0f);
        for (int64_t t = run.begin; t < run.end; ++t) {
            std::memcpy(window.data() + row, x + t * C, size_t(C) * 4);
            for (int64_t c = 0; c < C; ++c) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; ++k) acc += double(w[c * K + k]) * double(window[size_t(k * C + c)]);
                out[t * C + c] = float(acc);
            }
            std::memmove(window.data(), window.data() + C, size_t(row) * 4); // drop the oldest
            const int32_t snap = info[3 * t + 2];
            if (snap >= 0) std::memcpy(state + int64_t(snap) * row, window.data(), size_t(row) * 4);
        }
        std::memcpy(state + int64_t(run.write) * row, window.data(), size_t(row) * 4);
    }
}

void l2Normalize(const float* x, float* out, int64_t S, float eps, float scale) {
    double ss = 0.0;
    for (int64_t i = 0; i < S; ++i) ss += double(x[i]) * double(x[i]);
    const double inv = double(scale) / std::sqrt(ss + double(eps));
    for (int64_t i = 0; i < S; ++i) out[i] = float(double(x[i]) * inv);
}

void deltaStep(float* M, const float* q, const float* k, const float* v, float g, float beta, float* out, int64_t S) {
    const float decay = std::exp(g);
    for (int64_t i = 0; i < S; ++i) {
        float* r = M + i * S;
        double mk = 0.0;
        for (int64_t j = 0; j < S; ++j) {
            r[j] *= decay;
            mk += double(r[j]) * double(k[j]);
        }
        const float d = float((double(v[i]) - mk) * double(beta));
        double o = 0.0;
        for (int64_t j = 0; j < S; ++j) {
            r[j] += d * k[j];
            o += double(r[j]) * double(q[j]);
        }
        out[i] = float(o);
    }
}

void deltaNet(const float* qkv, const float* g, const float* beta, float* state, const int32_t* info, float* out,
              int64_t n, int64_t Hk, int64_t Hv, int64_t S, float eps) {
    const int64_t width = (2 * Hk + Hv) * S, head = S * S, row = Hv * head;
    const float qScale = 1.0f / std::sqrt(float(S));
    std::vector<float> M(static_cast<size_t>(row)), q(static_cast<size_t>(Hk * S)), k(static_cast<size_t>(Hk * S));
    for (const StateRun& run : stateRuns(info, n)) {
        if (run.read >= 0) std::memcpy(M.data(), state + int64_t(run.read) * row, size_t(row) * 4);
        else std::fill(M.begin(), M.end(), 0.0f);
        for (int64_t t = run.begin; t < run.end; ++t) {
            const float* x = qkv + t * width;
            for (int64_t h = 0; h < Hk; ++h) {
                l2Normalize(x + h * S, q.data() + h * S, S, eps, qScale);
                l2Normalize(x + (Hk + h) * S, k.data() + h * S, S, eps, 1.0f);
            }
            for (int64_t h = 0; h < Hv; ++h) {
                const int64_t hk = h % Hk;
                deltaStep(M.data() + h * head, q.data() + hk * S, k.data() + hk * S, x + (2 * Hk + h) * S,
                          g[t * Hv + h], beta[t * Hv + h], out + (t * Hv + h) * S, S);
            }
            const int32_t snap = info[3 * t + 2];
            if (snap >= 0) std::memcpy(state + int64_t(snap) * row, M.data(), size_t(row) * 4);
        }
        std::memcpy(state + int64_t(run.write) * row, M.data(), size_t(row) * 4);
    }
}

} // namespace hearth::cpu::ref
