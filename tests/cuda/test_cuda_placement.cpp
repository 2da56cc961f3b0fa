// Which nodes the CUDA device takes, decided on the host (the op graph device's placement over
// cuda::CudaCapabilities needs no GPU): the self-test's cases of the ops the kernels cover are all
// accepted for every weight type the kernels read, and every node of each tiny architecture's
// steps (decode, a short and a longer prefill) runs on the device, so a model of the weight types
// the kernels read never leaves the GPU. No self-test case is refused (what would be is printed
// per op), so a GPU machine's selftest reports none unsupported.
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_op_device.h"
#include "backend/op_graph_device.h"
#include "backend/selftest_cases.h"
#include "hearth/gguf.h"
#include "hearth/synth.h"
#include "model/arch.h"
#include "test_support.h"
#include "tiny_vocab.h"

#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <set>

using namespace hearth;

namespace {

// The ops whose every case the CUDA kernels must take (given a weight type they read).
const std::set<graph::Op> kCovered = {
    graph::Op::GetRows, graph::Op::MatMul,   graph::Op::MatMulId, graph::Op::RmsNorm,     graph::Op::LayerNorm, graph::Op::Rope,
    graph::Op::Add,     graph::Op::Mul,      graph::Op::Scale,    graph::Op::Silu,        graph::Op::Gelu,
    graph::Op::SwiGlu,  graph::Op::GeGlu,    graph::Op::Softmax,  graph::Op::Softcap,     graph::Op::TopK,
    graph::Op::ArgSort, graph::Op::Gather,   graph::Op::WeightedSum, graph::Op::SwiGluOai, graph::Op::Sigmoid,
    graph::Op::Softplus, graph::Op::Copy,   graph::Op::Concat,   graph::Op::RmsNormGated, graph::Op::SsmConv,
    graph::Op::DeltaNet, graph::Op::KvWrite, graph::Op::Attention};

// Whether every weight the node reads has a type the kernels dequantize.
bool weightsReadable(const graph::Graph& g, const graph::Node& n) {
    for (graph::TensorId s : n.src) {
        if (s == graph::kNone) continue;
        const graph::Tensor& root = g.tensor(g.root(s));
        if (root.kind == graph::TensorKind::Weight && !cuda::weightTypeSupported(g.tensor(s).type)) return false;
    }
    return true;
}

bool runsOnCuda(const graph::Graph& g, const graph::Node& n) {
    return backend::opDeviceRunsNode(cuda::CudaCapabilities{}, g, n);
}

// "op xN, ..." of the refused nodes.
std::string tally(const std::map<std::string, int>& refused) {
    std::string s;
    for (const auto& [op, count] : refused) s += (s.empty() ? "" : ", ") + op + " x" + std::to_string(count);
    return s.empty() ? "none" : s;
}

} // namespace

class TestCudaPlacement : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string m_vocab;

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_vocab = m_dir.filePath(QStringLiteral("vocab.gguf")).toStdString();
        QVERIFY(test::writeTinyVocab(m_vocab).isOk());
    }

    void selftestCasesOfCoveredOps() {
        backend::selftest::WeightTable weights;
        std::vector<backend::selftest::Case> cases;
        std::vector<std::string> notQuantizable;
        QVERIFY(backend::selftest::buildCases(SelftestOptions{}, weights, cases, notQuantizable).isOk());
        QVERIFY(cases.size() > 300);
        std::map<std::string, int> refused;
        int covered = 0;
        for (const backend::selftest::Case& c : cases) {
            for (const graph::Node& n : c.graph.nodes()) {
                if (runsOnCuda(c.graph, n)) continue;
                refused[std::string(graph::opName(n.op)) + " " + c.type] += 1;
                const bool mustTake = kCovered.count(n.op) && weightsReadable(c.graph, n);
                QVERIFY2(!mustTake, (c.op + " " + c.type + " " + c.shape + ": refused").c_str());
            }
            covered += kCovered.count(c.graph.nodes().back().op) ? 1 : 0;
        }
        QVERIFY(covered > 100);
        qInfo("cases refused on CUDA: %s", tally(refused).c_str());
        // Every weight type of the self-test has kernels now: `selftest --device cuda:0` leaves
        // nothing unsupported.
        QCOMPARE(tally(refused), std::string("none"));
    }

    void tinyArchitecturesStayOnTheDevice_data() {
        QTest::addColumn<QString>("preset");
        for (const char* p : {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "phi3-tiny", "gemma3-tiny", "mixtral-tiny",
                              "qwen3moe-tiny", "mistral3-tiny", "gpt-oss-tiny", "gemma4-tiny", "qwen35-tiny",
                              "qwen35moe-tiny"})
            QTest::newRow(p) << QString::fromLatin1(p);
    }
    void tinyArchitecturesStayOnTheDevice() {
        QFETCH(QString, preset);
        SynthOptions o;
        o.preset = preset.toStdString();
        o.typeOrMix = "Q4_K_M";
        o.vocabPath = m_vocab;
        o.outPath = m_dir.filePath(preset + QStringLiteral(".gguf")).toStdString();
        const Status written = synthesizeModel(o);
        QVERIFY2(written.isOk(), written.toString().c_str());
        auto file = gguf::File::open(o.outPath);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        model::KvSetup kv;
        kv.numBlocks = 16;
        kv.stateSlots = 4;
        std::map<std::string, int> refused;
        for (int64_t tokens : {int64_t(1), int64_t(4), int64_t(37)}) {
            graph::StepShape shape;
            shape.tokens = tokens;
            shape.wanted = 1;
            shape.tableLen = 64;
            const graph::Graph g = (*arch)->buildGraph(shape, kv);
            QVERIFY2(g.status().isOk(), g.status().toString().c_str());
            for (const graph::Node& n : g.nodes())
                if (!runsOnCuda(g, n)) refused[graph::opName(n.op)] += 1;
        }
        qInfo("%s: nodes refused on CUDA: %s", qPrintable(preset), tally(refused).c_str());
        QVERIFY2(refused.empty(), tally(refused).c_str());
    }
};

QTEST_GUILESS_MAIN(TestCudaPlacement)
#include "test_cuda_placement.moc"
