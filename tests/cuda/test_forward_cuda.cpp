// The llama forward pass on CUDA (model::CudaLlamaForward) against the scalar reference forward:
// two steps over two sequences (a chunked prefill next to a sequence in scattered blocks, then a
// copy-on-write of a block), all logits, for stories260K (F32, GQA, n_ff 172) and
// llama-2-tiny-random (F16), with F32 and F16 K/V. Exits 77 (skipped) without a CUDA device.
#include "backend/cpu/paged_kv.h"
#include "backend/cuda/cuda_device.h"
#include "hearth/gguf.h"
#include "model/llama_forward_cuda.h"
#include "model/llama_model.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

using namespace hearth;

class TestForwardCuda : public QObject {
    Q_OBJECT
private slots:
    void compare_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kv");
        QTest::addColumn<int>("gpuLayers"); // -1: all; otherwise the rest run on the CPU
        const QString stories = QStringLiteral("models/stories260K.gguf");
        QTest::newRow("stories260K f32 kv") << stories << int(KvType::F32) << -1;
        QTest::newRow("stories260K f16 kv") << stories << int(KvType::F16) << -1;
        QTest::newRow("stories260K f16 kv, 2 of 5 layers") << stories << int(KvType::F16) << 2;
        QTest::newRow("stories260K f32 kv, 0 layers") << stories << int(KvType::F32) << 0;
        QTest::newRow("tiny-random f16 kv") << QStringLiteral("models/llama-2-tiny-random.gguf") << int(KvType::F16) << -1;
    }

    // Tolerance: |Δlogit| <= 3e-2 * max(1, max|logit|) (prefill runs fp16 tensor-core tiles, F16 K/V
    // rounds keys and values the same way on both sides) and the argmax agrees on 90% of rows.
    void compare() {
        QFETCH(QString, model);
        QFETCH(int, kv);
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(model);
        const auto kvType = KvType(kv);
        auto file = gguf::File::open(test::testDataPath(model));
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto m = model::LlamaModel::load(*file);
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        const auto& hp = (*m)->hparams();
        auto fwd = model::CudaLlamaForward::create(**m, 0, 8, 16, kvType, gpuLayers);
        QVERIFY2(fwd.isOk(), fwd.status().toString().c_str());
        const int cpuLayers = hp.nLayer - (*fwd)->gpuLayers();
        QCOMPARE((*fwd)->gpuLayers(), gpuLayers < 0 ? hp.nLayer : gpuLayers);
        // The CPU layers' K/V (same block ids), used only with a split.
        auto cpuStore = cpu::PagedKvStore::create(std::max(cpuLayers, 1), 8, 16, hp.nHeadKv, hp.headDim, kvType);
        QVERIFY(cpuStore.isOk());
        cpu::PagedKvStore* cpuKv = cpuLayers > 0 ? &*cpuStore : nullptr;
        auto refStore = cpu::PagedKvStore::create(hp.nLayer, 8, 16, hp.nHeadKv, hp.headDim, kvType);
        QVERIFY(refStore.isOk());

        std::vector<int32_t> t0{1}, t1{1};
        for (int i = 0; i < 36; ++i) t0.push_back((i * 7919 + 13) % (hp.nVocab - 300) + 256);
        for (int i = 0; i < 20; ++i) t1.push_back((i * 104729 + 71) % (hp.nVocab - 300) + 256);
        std::vector<int32_t> table0{0, 1, 2};
        const std::vector<int32_t> table1{7, 5};
        double maxDiff = 0.0, maxLogit = 0.0;
        int agree = 0, rows = 0;
        // Step 1: 30 + 12 tokens (matMul path); step 2: 7 + 9 tokens, after block 0 -> 4.
        for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21}}) {
            if (a0 > 0) {
                refStore->copyBlock(0, 4);
                if (cpuKv) cpuKv->copyBlock(0, 4);
                const Status s = (*fwd)->copyBlock(0, 4);
                QVERIFY2(s.isOk(), s.toString().c_str());
                table0[0] = 4;
            }
            model::Batch batch;
            batch.blockTables = {table0, table1};
            for (int p = a0; p < b0; ++p) batch.tokens.push_back({t0[size_t(p)], p, 0, true});
            for (int p = a1; p < b1; ++p) batch.tokens.push_back({t1[size_t(p)], p, 1, true});
            std::vector<float> ref, ours;
            Status s = (*m)->forward(batch, *refStore, ref);
            QVERIFY2(s.isOk(), s.toString().c_str());
            s = (*fwd)->forward(batch, ours, cpuKv);
            QVERIFY2(s.isOk(), s.toString().c_str());
            QCOMPARE(ours.size(), ref.size());
            const size_t V = size_t(hp.nVocab);
            for (size_t r = 0; r < ref.size() / V; ++r) {
                const float* x = &ref[r * V];
                const float* y = &ours[r * V];
                for (size_t i = 0; i < V; ++i) {
                    maxDiff = std::max(maxDiff, double(std::fabs(x[i] - y[i])));
                    maxLogit = std::max(maxLogit, double(std::fabs(x[i])));
                }
                agree += std::max_element(x, x + V) - x == std::max_element(y, y + V) - y;
                ++rows;
            }
        }
        // Decode: one token per sequence (the matVec path).
        model::Batch batch;
        batch.blockTables = {table0, table1};
        batch.tokens.push_back({t1[3], 21, 1, true});
        batch.tokens.push_back({t0[5], 37, 0, true});
        std::vector<float> ref, ours;
        QVERIFY((*m)->forward(batch, *refStore, ref).isOk());
        const Status s = (*fwd)->forward(batch, ours, cpuKv);
        QVERIFY2(s.isOk(), s.toString().c_str());
        QCOMPARE(ours.size(), ref.size());
        for (size_t i = 0; i < ref.size(); ++i) maxDiff = std::max(maxDiff, double(std::fabs(ref[i] - ours[i])));

        std::printf("%s: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n",
                    qPrintable(model), rows, maxDiff, maxLogit, agree);
        QVERIFY(maxDiff <= 3e-2 * std::max(1.0, maxLogit));
        QVERIFY(agree * 10 >= rows * 9);
    }
};

// Skips the whole executable (exit 77, SKIP_RETURN_CODE) when CUDA cannot be used here.
int main(int argc, char** argv) {
    const auto count = cuda::deviceCount();
    if (!count.isOk()) {
        std::printf("SKIP: no usable CUDA device/driver: %s\n", count.status().toString().c_str());
        return 77;
    }
    QCoreApplication app(argc, argv);
    TestForwardCuda test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_forward_cuda.moc"
