// CUDA graphs, which only the CUDA device has (every device's checks are in
// tests/device/test_forward_devices.cpp): decode steps replayed from captured graphs give exactly
// the logits of the same steps launched directly, while positions, tokens, block tables and the
// rows that want logits change under them. Without a usable CUDA driver/device it skips (QSKIP)
// with the runtime's reason.
#include "backend/cuda/cuda_device.h"
#include "model_harness.h"
#include "test_support.h"

#include <QtTest>

using namespace hearth;

namespace {

// A load meant for the GPU that the runner put on the CPU alone (it runs a quick self-test of the
// device before trusting it) would pass every comparison: the test checks where it ran.
bool onGpu(const test::LoadedModel& m) { return m.runner->deviceId() == "cuda:0" && m.runner->deviceCount() == 2; }

} // namespace

class TestCudaGraphs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        const auto count = cuda::deviceCount();
        if (!count.isOk()) QSKIP(("no usable CUDA device/driver: " + count.status().toString()).c_str());
    }

    // Decode-sized steps are captured once per program and replayed; the replays must give
    // exactly the logits of direct launches (same kernels, same arguments) while the batch
    // contents change under them: positions, tokens, block tables and which rows want logits.
    void graphReplayEqualsDirect() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = "cuda:0";
        o.kvType = KvType::F16;
        o.numBlocks = 16;
        qputenv("HEARTH_CUDA_GRAPHS", "0"); // read when the device opens
        auto direct = test::loadModel(path, o);
        qunsetenv("HEARTH_CUDA_GRAPHS");
        auto graphed = test::loadModel(path, o);
        QVERIFY2(direct.isOk(), direct.status().toString().c_str());
        QVERIFY2(graphed.isOk(), graphed.status().toString().c_str());
        QVERIFY(onGpu(**direct) && onGpu(**graphed));

        const int nVocab = (*direct)->dims().nVocab;
        const std::vector<std::vector<int32_t>> tables = {{3, 9, 1}, {12, 0}, {6, 7, 14}};
        std::vector<int> length = {9, 13, 17};
        // Prefill three prompts (matMul path, no graph), then decode steps of 1..3 tokens.
        graph::Batch prefill;
        prefill.blockTables.assign(tables.begin(), tables.end());
        for (int s = 0; s < 3; ++s)
            for (int p = 0; p < length[size_t(s)]; ++p)
                prefill.tokens.push_back({(p * 31 + s * 7) % (nVocab - 1) + 1, p, s, false});
        std::vector<float> a, b;
        QVERIFY((*direct)->runner->forward(prefill, a).isOk());
        QVERIFY((*graphed)->runner->forward(prefill, b).isOk());
        for (int step = 0; step < 12; ++step) {
            graph::Batch batch;
            batch.blockTables.assign(tables.begin(), tables.end());
            const int nSeqs = 1 + step % 3;
            for (int s = 0; s < nSeqs; ++s) {
                const bool want = s != 1 || step % 2 == 0;
                batch.tokens.push_back({(step * 13 + s * 5) % (nVocab - 1) + 1, length[size_t(s)]++, s, want});
            }
            const Status sa = (*direct)->runner->forward(batch, a), sb = (*graphed)->runner->forward(batch, b);
            QVERIFY2(sa.isOk(), sa.toString().c_str());
            QVERIFY2(sb.isOk(), sb.toString().c_str());
            QCOMPARE(b.size(), a.size());
            QVERIFY2(a == b, qPrintable(QStringLiteral("step %1: graph replay differs from direct launches").arg(step)));
        }
    }
};

QTEST_GUILESS_MAIN(TestCudaGraphs)
#include "test_cuda_graphs.moc"
