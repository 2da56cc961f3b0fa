// The hybrid models' ops on the optimized CPU device (recurrent_fast.cpp) against the "ref"
// device, as single-op graphs with random inputs at every instruction-set level: SsmConv and
// DeltaNet over decode batches, single long runs and mixed runs, zeroed and prefilled states and
// snapshots (the outputs and the whole state pool compared), plus Sigmoid, Softplus and
// RmsNormGated; a wrong slot must show, a slot outside the pool must be an error; and the
// DeltaNet decode and prefill and the SsmConv prefill timings of both.
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"
#include "graph/graph.h"
#include "graph_program.h"

#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <time.h>
#include <vector>

using namespace hearth;
using graph::StepInput;
using graph::TensorId;
using test::uniformValues;

namespace {

// One op's graph with the values of its leaves and its state pool.
struct OpCase {
    graph::Graph g;
    std::vector<std::pair<TensorId, std::vector<float>>> floats;
    std::vector<std::pair<TensorId, std::vector<int32_t>>> ints;
    TensorId out = graph::kNone, state = graph::kNone;
    std::string name;

    TensorId leaf(std::array<int64_t, 4> ne, std::vector<float> values, const std::string& label) {
        const TensorId id = g.newActivation(quant::Type::F32, ne, label);
        floats.emplace_back(id, std::move(values));
        return id;
    }
};

// The case's graph on dev with its leaves written (buffers poisoned first).
Result<test::GraphProgram> bind(backend::Device& dev, const OpCase& c) {
    HEARTH_RETURN_IF_ERROR(c.g.status());
    test::GraphProgram b;
    HEARTH_RETURN_IF_ERROR(b.init(dev, c.g, true));
    for (const auto& [id, v] : c.floats) HEARTH_RETURN_IF_ERROR(b.set(id, v));
    for (const auto& [id, v] : c.ints) HEARTH_RETURN_IF_ERROR(b.set(id, v));
    return b;
}

// max |a - b| / max |b| (infinite for a size mismatch or a value that is not finite).
double relError(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size() || b.empty()) return INFINITY;
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < b.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        diff = std::max(diff, double(std::fabs(a[i] - b[i])));
        scale = std::max(scale, double(std::fabs(b[i])));
    }
    return diff / std::max(scale, 1e-30);
}

std::vector<float> normal(size_t n, std::mt19937& rng, float sd, float mean = 0.0f) {
    std::normal_distribution<float> d(mean, sd);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// Per-token state slots (read, write, snapshot).
using Slots = std::vector<std::array<int32_t, 3>>;

std::vector<int32_t> flatten(const Slots& s) {
    std::vector<int32_t> v;
    for (const auto& t : s) v.insert(v.end(), t.begin(), t.end());
    return v;
}

// A single run of n tokens from `read` into `write`, with snapshots at the given tokens.
Slots oneRun(int n, int32_t read, int32_t write, std::vector<std::pair<int, int32_t>> snaps = {}) {
    Slots s(size_t(n), {read, write, -1});
    for (auto [t, slot] : snaps) s[size_t(t)][2] = slot;
    return s;
}

Slots concat(std::initializer_list<Slots> parts) {
    Slots out;
    for (const Slots& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

OpCase deltaNetCase(int64_t S, int64_t Hk, int64_t Hv, const Slots& slots, int64_t stateSlots, uint32_t seed) {
    std::mt19937 rng(seed);
    OpCase c;
    const int64_t n = int64_t(slots.size());
    c.name = "delta_net S=" + std::to_string(S) + " Hk=" + std::to_string(Hk) + " Hv=" + std::to_string(Hv) +
             " n=" + std::to_string(n);
    const TensorId qkv = c.leaf({(2 * Hk + Hv) * S, n, 1, 1}, normal(size_t((2 * Hk + Hv) * S * n), rng, 1.0f), "qkv");
    const TensorId g = c.leaf({Hv, n, 1, 1}, uniformValues(size_t(Hv * n), rng, -1.5f, -0.01f), "g");
    const TensorId beta = c.leaf({Hv, n, 1, 1}, uniformValues(size_t(Hv * n), rng, 0.05f, 0.95f), "beta");
    c.state = c.g.state(0, true, stateSlots, Hv * S * S);
    c.floats.emplace_back(c.state, normal(size_t(stateSlots * Hv * S * S), rng, 0.2f));
    const TensorId info = c.g.input(StepInput::StateInfo, 3, n);
    c.ints.emplace_back(info, flatten(slots));
    c.out = c.g.deltaNet(qkv, g, beta, c.state, info, int32_t(Hk), S, 1e-6f);
    return c;
}

OpCase ssmConvCase(int64_t C, int64_t K, const Slots& slots, int64_t stateSlots, uint32_t seed) {
    std::mt19937 rng(seed);
    OpCase c;
    const int64_t n = int64_t(slots.size());
    c.name = "ssm_conv C=" + std::to_string(C) + " K=" + std::to_string(K) + " n=" + std::to_string(n);
    const TensorId x = c.leaf({C, n, 1, 1}, normal(size_t(C * n), rng, 1.0f), "x");
    const TensorId w = c.leaf({K, C, 1, 1}, normal(size_t(K * C), rng, 0.5f), "w");
    c.state = c.g.state(0, false, stateSlots, (K - 1) * C);
    c.floats.emplace_back(c.state, normal(size_t(stateSlots * (K - 1) * C), rng, 1.0f));
    const TensorId info = c.g.input(StepInput::StateInfo, 3, n);
    c.ints.emplace_back(info, flatten(slots));
    c.out = c.g.ssmConv(x, w, c.state, info);
    return c;
}

std::vector<cpu::Isa> levels() {
    std::vector<cpu::Isa> out;
    for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::AvxVnni, cpu::Isa::Avx512})
        if (cpu::isaSupported(isa)) out.push_back(isa);
    return out;
}

int threads() { return int(std::clamp(std::thread::hardware_concurrency(), 1u, 16u)); }

} // namespace

class TestRecurrentOps : public QObject {
    Q_OBJECT

    cpu::ThreadPool m_pool{threads()};
    cpu::CpuDevice m_ref{true, nullptr};
    cpu::CpuDevice m_cpu{false, &m_pool};

    // The case on the reference and at every level on the CPU device: output and state pool
    // within tol of the reference's.
    void check(const OpCase& c, double tol) {
        auto ref = bind(m_ref, c);
        QVERIFY2(ref.isOk(), qPrintable(QString::fromStdString(c.name + ": " + ref.status().toString())));
        const Status rs = ref->run();
        QVERIFY2(rs.isOk(), qPrintable(QString::fromStdString(rs.toString())));
        const std::vector<float> wantOut = ref->get(c.out);
        const std::vector<float> wantState = c.state != graph::kNone ? ref->get(c.state) : std::vector<float>{};
        for (cpu::Isa isa : levels()) {
            QVERIFY(cpu::forceIsa(isa));
            auto got = bind(m_cpu, c);
            QVERIFY2(got.isOk(), qPrintable(QString::fromStdString(got.status().toString())));
            const Status s = got->run();
            QVERIFY2(s.isOk(), qPrintable(QString::fromStdString(s.toString())));
            const double eo = relError(got->get(c.out), wantOut);
            const double es = c.state != graph::kNone ? relError(got->get(c.state), wantState) : 0.0;
            QVERIFY2(eo <= tol && es <= tol, qPrintable(QString("%1 at %2: output %3, state %4 (tol %5)")
                                                            .arg(QString::fromStdString(c.name))
                                                            .arg(cpu::isaName(isa)).arg(eo).arg(es).arg(tol)));
        }
        QVERIFY(cpu::forceIsa(cpu::detectIsa()));
    }

    // Seconds per run of the case on a device (best of `reps`; the state advances each time):
    // wall-clock, or the calling thread's CPU time (steadier on a busy machine, and the whole
    // cost when the device runs on one thread).
    static double timeRuns(backend::Device& dev, const OpCase& c, int reps, bool cpuTime = false) {
        auto b = bind(dev, c);
        if (!b.isOk()) return NAN;
        auto now = [cpuTime] {
            if (!cpuTime) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
            timespec ts{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
        };
        double best = INFINITY;
        for (int r = 0; r < reps; ++r) {
            const double t0 = now();
            if (!b->run().isOk()) return NAN;
            best = std::min(best, now() - t0);
        }
        return best;
    }

private Q_SLOTS:
    void deltaNetDecodeBatch() {
        // Three sequences of one token: zeros, a prefilled slot in place, and a slot read into
        // another with a snapshot.
        const Slots slots{{-1, 0, -1}, {1, 1, -1}, {2, 4, 5}};
        check(deltaNetCase(32, 2, 2, slots, 6, 1), 1e-5);
        check(deltaNetCase(64, 2, 4, slots, 6, 2), 1e-5);
        check(deltaNetCase(128, 4, 8, slots, 6, 3), 1e-5);
    }

    void deltaNetSingleRuns() {
        check(deltaNetCase(64, 2, 2, oneRun(37, 1, 1, {{10, 3}, {36, 5}}), 6, 4), 1e-5);
        check(deltaNetCase(32, 2, 4, oneRun(37, -1, 2, {{0, 0}}), 4, 5), 1e-5);
        check(deltaNetCase(128, 2, 4, oneRun(130, -1, 0, {{63, 2}}), 3, 6), 1e-5);
        check(deltaNetCase(128, 1, 2, oneRun(130, 1, 1), 3, 7), 1e-5);
    }

    void deltaNetMixedRuns() {
        const Slots slots = concat({oneRun(5, 0, 0), oneRun(1, -1, 3), oneRun(9, 2, 4, {{3, 5}}), oneRun(2, 1, 1, {{0, 6}})});
        check(deltaNetCase(64, 2, 4, slots, 7, 8), 1e-5);
        check(deltaNetCase(128, 2, 2, slots, 7, 9), 1e-5);
    }

    void deltaNetExtremeDecay() {
        // Decays far below float's range (e^-150 is 0) and long products of small ones: the fast
        // kernels keep the decay as a separate scale and must fold it back in time.
        for (const Slots& slots : {oneRun(3, 0, 0, {{1, 1}}), oneRun(12, 0, 0, {{5, 1}})})
            for (int64_t S : {64, 128}) {
                OpCase c = deltaNetCase(S, 2, 2, slots, 2, 13);
                std::vector<float>& g = c.floats[1].second; // [n][Hv]
                for (size_t i = 0; i < g.size(); ++i) g[i] = i % 3 == 0 ? -60.0f : (i % 3 == 1 ? -150.0f : -9.0f);
                check(c, 1e-5);
            }
    }

    void deltaNetOddHeadSizes() {
        // Heads that are not a whole number of registers take the loop and scalar bodies.
        check(deltaNetCase(24, 1, 2, oneRun(9, 0, 0, {{4, 1}}), 2, 10), 1e-5);
        check(deltaNetCase(48, 2, 2, oneRun(9, -1, 0), 2, 11), 1e-5);
        check(deltaNetCase(256, 1, 1, oneRun(4, 1, 0), 2, 12), 1e-5);
    }

    void ssmConvRuns() {
        const Slots decode{{-1, 0, -1}, {1, 1, -1}, {2, 4, -1}};
        check(ssmConvCase(40, 4, decode, 6, 20), 1e-5);
        check(ssmConvCase(6144, 4, decode, 6, 21), 1e-5);
        check(ssmConvCase(300, 4, oneRun(37, 1, 1, {{0, 2}, {1, 3}, {20, 4}}), 6, 22), 1e-5);
        check(ssmConvCase(300, 2, oneRun(37, -1, 0, {{36, 1}}), 2, 23), 1e-5);
        check(ssmConvCase(257, 5, oneRun(130, 0, 0), 2, 24), 1e-5);
        // Runs shorter than the window: the rest of it comes from the slot read (here in place).
        const Slots shortRuns = concat({oneRun(2, 0, 0, {{0, 5}}), oneRun(1, 1, 1), oneRun(3, 2, 3), oneRun(1, -1, 4)});
        check(ssmConvCase(300, 4, shortRuns, 6, 25), 1e-5);
    }

    void elementwise() {
        std::mt19937 rng(30);
        for (const auto& [rows, width] : std::vector<std::pair<int64_t, int64_t>>{{1, 16}, {3, 33}, {300, 257}}) {
            std::vector<float> x = normal(size_t(rows * width), rng, 6.0f);
            const float edges[] = {-100.0f, 100.0f, -20.5f, 20.5f, 19.9f, 0.0f, -30.0f, 1e-8f, -88.5f, 88.5f};
            for (size_t i = 0; i < std::size(edges) && i < x.size(); ++i) x[i] = edges[i];
            for (int op = 0; op < 2; ++op) {
                OpCase c;
                c.name = std::string(op ? "softplus " : "sigmoid ") + std::to_string(rows) + "x" + std::to_string(width);
                const TensorId in = c.leaf({width, rows, 1, 1}, x, "x");
                c.out = op ? c.g.softplus(in) : c.g.sigmoid(in);
                check(c, 2e-6);
            }
            OpCase c;
            c.name = "rms_norm_gated " + std::to_string(rows) + "x" + std::to_string(width);
            const TensorId in = c.leaf({width, rows, 1, 1}, normal(size_t(rows * width), rng, 2.0f), "x");
            const TensorId w = c.leaf({width, 1, 1, 1}, normal(size_t(width), rng, 1.0f, 1.0f), "w");
            const TensorId z = c.leaf({width, rows, 1, 1}, x, "z");
            c.out = c.g.rmsNormGated(in, w, z, 1e-6f);
            check(c, 2e-6);
        }
    }

    void wrongSlotShows() {
        // The negative control: the same inputs with the second sequence reading another
        // prefilled slot must give a different output and state (so the checks above can fail).
        const Slots slots{{-1, 0, -1}, {1, 1, -1}, {2, 4, -1}};
        const Slots wrong{{-1, 0, -1}, {3, 1, -1}, {2, 4, -1}};
        for (bool conv : {false, true}) {
            OpCase a = conv ? ssmConvCase(300, 4, slots, 6, 40) : deltaNetCase(64, 2, 4, slots, 6, 40);
            OpCase b = conv ? ssmConvCase(300, 4, wrong, 6, 40) : deltaNetCase(64, 2, 4, wrong, 6, 40);
            auto ra = bind(m_ref, a);
            auto rb = bind(m_cpu, b);
            QVERIFY(ra.isOk() && rb.isOk());
            QVERIFY(ra->run().isOk() && rb->run().isOk());
            const double eo = relError(rb->get(b.out), ra->get(a.out));
            const double es = relError(rb->get(b.state), ra->get(a.state));
            QVERIFY2(eo > 1e-2 && es > 1e-2, qPrintable(QString("%1: output %2, state %3").arg(conv ? "conv" : "delta").arg(eo).arg(es)));
        }
    }

    void slotOutsideThePoolIsAnError() {
        for (const Slots& bad : {Slots{{0, 6, -1}}, Slots{{7, 0, -1}}, Slots{{0, 0, 9}}, Slots{{-2, 0, -1}}, Slots{{0, -1, -1}}})
            for (bool conv : {false, true}) {
                const OpCase c = conv ? ssmConvCase(40, 4, bad, 6, 50) : deltaNetCase(32, 1, 1, bad, 6, 50);
                for (backend::Device* dev : {static_cast<backend::Device*>(&m_ref), static_cast<backend::Device*>(&m_cpu)}) {
                    auto b = bind(*dev, c);
                    QVERIFY(b.isOk());
                    const Status s = b->run();
                    QVERIFY2(s.code() == ErrorCode::OutOfRange, qPrintable(QString::fromStdString(c.name + ": " + s.toString())));
                }
            }
    }

    void deltaNetTimings() {
        // Decode: 16 sequences of one token each (16 runs); prefill: one run of 512 tokens.
        Slots decode;
        for (int32_t s = 0; s < 16; ++s) decode.push_back({s, s, -1});
        const OpCase dec = deltaNetCase(128, 16, 16, decode, 16, 60);
        const OpCase pre = deltaNetCase(128, 16, 16, oneRun(512, -1, 0), 1, 61);
        const double decRef = timeRuns(m_ref, dec, 2, true), preRef = timeRuns(m_ref, pre, 1, true);
        cpu::ThreadPool one(1);
        cpu::CpuDevice single(false, &one);
        const double decOne = timeRuns(single, dec, 20, true), preOne = timeRuns(single, pre, 3, true);
        const double decFast = timeRuns(m_cpu, dec, 20), preFast = timeRuns(m_cpu, pre, 3);
        QVERIFY(std::isfinite(decRef) && std::isfinite(preRef) && std::isfinite(decOne) && std::isfinite(preOne) &&
                std::isfinite(decFast) && std::isfinite(preFast));
        qInfo("delta_net S=128 Hk=Hv=16 at %s, one thread (CPU time): decode 16 seqs ref %.2f ms, fast %.3f ms (%.0fx); "
              "prefill 512 tokens ref %.1f ms, fast %.2f ms (%.0fx)",
              cpu::activeIsa(), decRef * 1e3, decOne * 1e3, decRef / decOne, preRef * 1e3, preOne * 1e3, preRef / preOne);
        qInfo("delta_net fast on %d threads (wall clock): decode %.3f ms, prefill %.2f ms", m_pool.size(), decFast * 1e3,
              preFast * 1e3);
    }

    void ssmConvTimings() {
        // Qwen3.5's convolution (C = 6144, K = 4) over a 512-token prefill run, one thread.
        const OpCase pre = ssmConvCase(6144, 4, oneRun(512, -1, 0), 1, 62);
        cpu::ThreadPool one(1);
        cpu::CpuDevice single(false, &one);
        const double ref = timeRuns(m_ref, pre, 1, true), fast = timeRuns(single, pre, 3, true);
        QVERIFY(std::isfinite(ref) && std::isfinite(fast));
        qInfo("ssm_conv C=6144 K=4 at %s, 512 tokens, one thread (CPU time): ref %.1f ms, fast %.2f ms (%.0fx)",
              cpu::activeIsa(), ref * 1e3, fast * 1e3, ref / fast);
    }
};

QTEST_APPLESS_MAIN(TestRecurrentOps)
#include "test_recurrent_ops.moc"
