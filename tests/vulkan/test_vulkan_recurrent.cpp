// The hybrid models' recurrent ops on the Vulkan graph device beyond the self-test's single runs:
// a State pool is taken only while it fits one binding (a lowered limit refuses one slot more),
// head sizes without a delta_net shader and kernels wider than ssm_conv's window are refused, and
// one compiled program of ssm_conv → delta_net run three times with new inputs and StateInfo
// (a prefill with a snapshot, decode of three sequences, one fork from the snapshot) leaves the
// same outputs and State pools as the reference device after every run (|d| <= 1e-4 · max(1,
// max |ref|)): the pools persist between runs and the recorded list reads each run's info.
// Skips when there is no Vulkan device.
#include "backend/device.h"
#include "backend/vulkan/vk_graph_device.h"
#include "graph/graph.h"
#include "graph_program.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>

using namespace hearth;

namespace {

using graph::TensorId;
using test::uniformValues;

// ssm_conv of x [n][C] (C = (2Hk + Hv)·S) by w [C][K] (an activation here), then delta_net.
struct Hybrid {
    graph::Graph g;
    TensorId x, w, gate, beta, info, conv, delta, out;
    Hybrid(int64_t n, int64_t S, int64_t Hk, int64_t Hv, int64_t K, int64_t slots, int64_t convSlots = 0) {
        const int64_t C = (2 * Hk + Hv) * S;
        x = g.newActivation(quant::Type::F32, {C, n, 1, 1}, "x");
        w = g.newActivation(quant::Type::F32, {K, C, 1, 1}, "w");
        gate = g.newActivation(quant::Type::F32, {Hv, n, 1, 1}, "g");
        beta = g.newActivation(quant::Type::F32, {Hv, n, 1, 1}, "beta");
        info = g.input(graph::StepInput::StateInfo, 3, n);
        conv = g.state(0, false, convSlots ? convSlots : slots, (K - 1) * C);
        delta = g.state(0, true, slots, Hv * S * S);
        const TensorId qkv = g.ssmConv(x, w, conv, info);
        out = g.deltaNet(qkv, gate, beta, delta, info, int32_t(Hk), S, 1e-6f);
    }
    bool supported(const backend::Device& d) const {
        return std::all_of(g.nodes().begin(), g.nodes().end(), [&](const graph::Node& n) { return d.supportsOp(g, n); });
    }
};

// One device with the graph's buffers (every root activation, input and State pool) and program.
struct Side {
    std::unique_ptr<backend::Device> device; // first: it outlives the program and buffers
    test::GraphProgram graph;
};

} // namespace

class TestVulkanRecurrent : public QObject {
    Q_OBJECT

    std::string m_why;

private Q_SLOTS:
    void initTestCase() {
        auto dev = backend::openDevice("vulkan:0");
        if (!dev) m_why = dev.status().toString();
    }
    void init() {
        if (!m_why.empty()) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
    }

    // Under a 64 KiB binding limit: 8 slots of 2 heads of 32² floats (64 KiB) are taken, 9 are
    // not; likewise the window pool; and no shader for S = 48 or K = 9.
    void stateWithinBindingLimit() {
        vk::VulkanOptions o;
        o.deviceIndex = 0;
        o.maxBindRange = 64 << 10;
        auto dev = vk::createVulkanGraphDevice(o);
        QVERIFY2(dev.isOk(), dev.status().toString().c_str());
        const backend::Device& d = **dev;
        QVERIFY(Hybrid(3, 32, 1, 2, 4, 8).supported(d));
        QVERIFY(!Hybrid(3, 32, 1, 2, 4, 9).supported(d));
        // The window pool: 128 channels · 3 · 4 bytes a slot, 42 slots fit 64 KiB, 43 do not.
        QVERIFY(Hybrid(3, 32, 1, 2, 4, 8, 42).supported(d));
        QVERIFY(!Hybrid(3, 32, 1, 2, 4, 8, 43).supported(d));
        auto open = backend::openDevice("vulkan:0");
        QVERIFY(open.isOk());
        QVERIFY(Hybrid(3, 64, 2, 4, 4, 64).supported(**open));
        QVERIFY(!Hybrid(3, 48, 1, 1, 4, 4).supported(**open));
        QVERIFY(!Hybrid(3, 32, 1, 1, 9, 4).supported(**open));
    }

    // Three runs of one program on Vulkan and on the reference, new inputs and StateInfo each time.
    void statePersistsAcrossRuns() {
        const int64_t n = 3, S = 32, Hk = 2, Hv = 4, K = 4, slots = 6, C = (2 * Hk + Hv) * S;
        Hybrid h(n, S, Hk, Hv, K, slots);
        QVERIFY2(h.g.status().isOk(), h.g.status().toString().c_str());
        Side vk, ref;
        auto v = backend::openDevice("vulkan:0");
        auto r = backend::openDevice("ref");
        QVERIFY(v.isOk() && r.isOk());
        vk.device = std::move(v).value();
        ref.device = std::move(r).value();
        QVERIFY(h.supported(*vk.device));
        QVERIFY2(vk.graph.init(*vk.device, h.g).isOk(), "vulkan program");
        QVERIFY2(ref.graph.init(*ref.device, h.g).isOk(), "reference program");
        std::mt19937 rng(11);
        const std::vector<float> conv0 = uniformValues(size_t(slots * (K - 1) * C), rng, -1.0f, 1.0f);
        const std::vector<float> delta0 = uniformValues(size_t(slots * Hv * S * S), rng, -1.0f, 1.0f);
        const std::vector<float> w = uniformValues(size_t(K * C), rng, -1.0f, 1.0f);
        for (Side* s : {&vk, &ref})
            QVERIFY(s->graph.set(h.conv, conv0).isOk() && s->graph.set(h.delta, delta0).isOk() &&
                    s->graph.set(h.w, w).isOk());
        const std::vector<std::vector<int32_t>> infos{
            {-1, 0, -1, -1, 0, 3, -1, 0, -1},  // a prefill of 3 from zeros, snapshot after token 1 in 3
            {0, 0, -1, 3, 4, -1, 5, 5, -1},    // decode: sequence 0, a fork from the snapshot, slot 5
            {4, 4, -1, 0, 0, 2, -1, 1, -1}};   // decode again; a snapshot; a fresh sequence
        for (size_t step = 0; step < infos.size(); ++step) {
            const std::vector<float> x = uniformValues(size_t(n * C), rng, -1.0f, 1.0f);
            const std::vector<float> g = uniformValues(size_t(n * Hv), rng, -2.0f, 0.0f);
            const std::vector<float> b = uniformValues(size_t(n * Hv), rng, 0.0f, 1.0f);
            for (Side* s : {&vk, &ref}) {
                QVERIFY(s->graph.set(h.x, x).isOk() && s->graph.set(h.gate, g).isOk() &&
                        s->graph.set(h.beta, b).isOk() && s->graph.set(h.info, infos[step]).isOk());
                const Status ran = s->graph.run();
                QVERIFY2(ran.isOk(), ran.toString().c_str());
            }
            const double eOut = test::relativeError(vk.graph.get(h.out), ref.graph.get(h.out));
            const double eConv = test::relativeError(vk.graph.get(h.conv), ref.graph.get(h.conv));
            const double eDelta = test::relativeError(vk.graph.get(h.delta), ref.graph.get(h.delta));
            qInfo("run %zu: out %.2e, window pool %.2e, matrix pool %.2e", step, eOut, eConv, eDelta);
            QVERIFY(eOut <= 1e-4 && eConv <= 1e-4 && eDelta <= 1e-4);
            if (step == 0) // the run changed both pools
                QVERIFY(test::relativeError(ref.graph.get(h.delta), delta0) > 1e-2 &&
                        test::relativeError(ref.graph.get(h.conv), conv0) > 1e-2);
        }
    }
};

QTEST_GUILESS_MAIN(TestVulkanRecurrent)
#include "test_vulkan_recurrent.moc"
