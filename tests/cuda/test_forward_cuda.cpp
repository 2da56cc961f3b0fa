// The llama forward pass on CUDA (model::CudaLlamaForward) against the scalar reference forward:
// two steps over two sequences (a chunked prefill next to a sequence in scattered blocks, then a
// copy-on-write of a block), all logits, then a decode step, for stories260K (F32, GQA, n_ff 172),
// llama-2-tiny-random (F16) and synthetic llama / qwen2.5 / qwen3 cuts in quantized types (the int8
// prefill path), with F32 and F16 K/V and layer splits; and decode steps replayed from CUDA graphs
// equal to the same steps launched directly. Exits 77 (skipped) without a CUDA device.
#include "backend/cpu/paged_kv.h"
#include "backend/cuda/cuda_device.h"
#include "hearth/gguf.h"
#include "hearth/synth.h"
#include "model/llama_forward_cuda.h"
#include "model/llama_model.h"
#include "logit_diff.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

using namespace hearth;

namespace {

struct Comparison : test::LogitDiff {
    std::string error; // empty when both forwards ran
};

// Prefill steps of 30 + 12 and 7 + 9 tokens (a copy-on-write of block 0 -> 4 between them), all
// logits, then one decode token per sequence, on CUDA and through the reference forward.
Comparison compare(const std::string& path, KvType kvType, int gpuLayers) {
    Comparison c;
    auto file = gguf::File::open(path);
    if (!file) return c.error = file.status().toString(), c;
    auto m = model::LlamaModel::load(*file);
    if (!m) return c.error = m.status().toString(), c;
    const auto& hp = (*m)->hparams();
    auto fwd = model::CudaLlamaForward::create(**m, 0, 8, 16, kvType, gpuLayers);
    if (!fwd) return c.error = fwd.status().toString(), c;
    const int cpuLayers = hp.nLayer - (*fwd)->gpuLayers();
    if ((*fwd)->gpuLayers() != (gpuLayers < 0 ? hp.nLayer : gpuLayers)) return c.error = "gpuLayers() differs", c;
    // The CPU layers' K/V (same block ids), used only with a split.
    std::optional<cpu::PagedKvStore> cpuStore;
    if (cpuLayers > 0) {
        auto st = cpu::PagedKvStore::create(cpuLayers, 8, 16, hp.nHeadKv, hp.headDim, kvType);
        if (!st) return c.error = "cpu store", c;
        cpuStore.emplace(std::move(*st));
    }
    cpu::PagedKvStore* cpuKv = cpuStore ? &*cpuStore : nullptr;
    auto refStore = cpu::PagedKvStore::create(hp.nLayer, 8, 16, hp.nHeadKv, hp.headDim, kvType);
    if (!refStore) return c.error = "reference store", c;

    std::vector<int32_t> t0{1}, t1{1};
    for (int i = 0; i < 36; ++i) t0.push_back((i * 7919 + 13) % (hp.nVocab - 300) + 256);
    for (int i = 0; i < 20; ++i) t1.push_back((i * 104729 + 71) % (hp.nVocab - 300) + 256);
    std::vector<int32_t> table0{0, 1, 2};
    const std::vector<int32_t> table1{7, 5};
    auto run = [&](const model::Batch& batch) -> Status {
        std::vector<float> ref, ours;
        HEARTH_RETURN_IF_ERROR((*m)->forward(batch, *refStore, ref));
        HEARTH_RETURN_IF_ERROR((*fwd)->forward(batch, ours, cpuKv));
        return c.add(ref, ours, size_t(hp.nVocab)) ? Status::ok() : internalError("logit count differs");
    };
    for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21}}) {
        if (a0 > 0) {
            refStore->copyBlock(0, 4);
            if (cpuKv) cpuKv->copyBlock(0, 4);
            const Status s = (*fwd)->copyBlock(0, 4);
            if (!s.isOk()) return c.error = s.toString(), c;
            table0[0] = 4;
        }
        model::Batch batch;
        batch.blockTables = {table0, table1};
        for (int p = a0; p < b0; ++p) batch.tokens.push_back({t0[size_t(p)], p, 0, true});
        for (int p = a1; p < b1; ++p) batch.tokens.push_back({t1[size_t(p)], p, 1, true});
        if (const Status s = run(batch); !s.isOk()) return c.error = s.toString(), c;
    }
    // Decode: one token per sequence (the matVec path, through a CUDA graph).
    model::Batch batch;
    batch.blockTables = {table0, table1};
    batch.tokens.push_back({t1[3], 21, 1, true});
    batch.tokens.push_back({t0[5], 37, 0, true});
    if (const Status s = run(batch); !s.isOk()) return c.error = s.toString(), c;
    return c;
}

} // namespace

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
        const Comparison c = ::compare(test::testDataPath(model), KvType(kv), gpuLayers);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("%s: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n", qPrintable(model),
                    c.rows, c.maxDiff, c.maxLogit, c.argmaxAgree);
        QVERIFY(c.maxDiff <= 3e-2 * std::max(1.0, c.maxLogit));
        QVERIFY(c.argmaxAgree * 10 >= c.rows * 9);
    }

    // Synthetic 2-layer cuts of real shapes in quantized types: prefill multiplies them with int8
    // activations (each rounded by up to half a step of its 32-value chunk, about 0.4% of the
    // chunk's largest): |Δlogit| <= 5e-2 * (1 + max|logit|), argmax agrees on 90% of rows. The
    // qwen cuts add QKV bias, NeoX RoPE and Q/K norm; one runs split 1 + 1 with the CPU.
    void syntheticModels_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<int>("gpuLayers");
        const QString spm = QStringLiteral("ggml-vocab-llama-spm.gguf"), qwen = QStringLiteral("ggml-vocab-qwen2.gguf");
        for (const char* t : {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K"})
            QTest::newRow(qPrintable(QStringLiteral("llama-tiny ") + t))
                << QStringLiteral("llama-tiny") << QString::fromLatin1(t) << spm << -1;
        QTest::newRow("qwen2.5 Q4_K_M") << QStringLiteral("qwen2.5-0.5b") << QStringLiteral("Q4_K_M") << qwen << -1;
        QTest::newRow("qwen3 Q8_0, 1 of 2 layers") << QStringLiteral("qwen3-0.6b") << QStringLiteral("Q8_0") << qwen << 1;
    }
    void syntheticModels() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        SynthOptions o;
        o.preset = preset.toStdString();
        o.typeOrMix = type.toStdString();
        o.vocabPath = test::testDataPath(QStringLiteral("models/") + vocab);
        o.outPath = dir.filePath(QStringLiteral("model.gguf")).toStdString();
        o.layers = 2;
        o.threads = 2;
        const Status made = synthesizeModel(o);
        QVERIFY2(made.isOk(), made.toString().c_str());
        const Comparison c = ::compare(o.outPath, KvType::F16, gpuLayers);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("%s %s: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n", qPrintable(preset),
                    qPrintable(type), c.rows, c.maxDiff, c.maxLogit, c.argmaxAgree);
        QVERIFY(c.maxDiff <= 5e-2 * (1.0 + c.maxLogit));
        QVERIFY(c.argmaxAgree * 10 >= c.rows * 9);
    }

    // Decode-sized steps are captured once per (tokens, wanted) shape and replayed; the replays
    // must give exactly the logits of direct launches (same kernels, same arguments) while the
    // batch contents change under them: positions, tokens, block tables and which rows want logits.
    void graphReplayEqualsDirect() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto file = gguf::File::open(test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto m = model::LlamaModel::load(*file);
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        qputenv("HEARTH_CUDA_GRAPHS", "0");
        auto direct = model::CudaLlamaForward::create(**m, 0, 16, 16, KvType::F16);
        qunsetenv("HEARTH_CUDA_GRAPHS");
        auto graphed = model::CudaLlamaForward::create(**m, 0, 16, 16, KvType::F16);
        QVERIFY(direct.isOk() && graphed.isOk());

        const int nVocab = (*m)->hparams().nVocab;
        const std::vector<std::vector<int32_t>> tables = {{3, 9, 1}, {12, 0}, {6, 7, 14}};
        std::vector<int> length = {0, 0, 0};
        // Prefill three prompts (matMul path, no graph), then decode steps of 1..3 tokens.
        model::Batch prefill;
        prefill.blockTables.assign(tables.begin(), tables.end());
        for (int s = 0; s < 3; ++s)
            for (int p = 0; p < 9 + 4 * s; ++p) prefill.tokens.push_back({(p * 31 + s * 7) % (nVocab - 1) + 1, p, s, false});
        for (int s = 0; s < 3; ++s) length[size_t(s)] = 9 + 4 * s;
        std::vector<float> a, b;
        QVERIFY((*direct)->forward(prefill, a).isOk());
        QVERIFY((*graphed)->forward(prefill, b).isOk());
        for (int step = 0; step < 12; ++step) {
            model::Batch batch;
            batch.blockTables.assign(tables.begin(), tables.end());
            const int nSeqs = 1 + step % 3;
            for (int s = 0; s < nSeqs; ++s) {
                const bool want = s != 1 || step % 2 == 0;
                batch.tokens.push_back({(step * 13 + s * 5) % (nVocab - 1) + 1, length[size_t(s)]++, s, want});
            }
            const Status sa = (*direct)->forward(batch, a), sb = (*graphed)->forward(batch, b);
            QVERIFY2(sa.isOk(), sa.toString().c_str());
            QVERIFY2(sb.isOk(), sb.toString().c_str());
            QCOMPARE(b.size(), a.size());
            QVERIFY2(a == b, qPrintable(QStringLiteral("step %1: graph replay differs from direct launches").arg(step)));
        }
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
