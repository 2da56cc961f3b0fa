// The CPU device (batched matMul kernels, threads, the reference for nodes no kernel covers)
// against the reference device on the same step graphs: stories260K (F32), llama-2-tiny-random,
// and synthetic llama-tiny, qwen2.5, qwen3, gemma3, qwen3moe, gpt-oss, phi3 and gemma4 cuts in float and
// quantized types, a few per test function. A batch mixes a prefill of one sequence with tokens of another whose blocks are
// scattered, so paging and batching are both exercised. Also: embedding rows read without mapping the table, and a
// warm decode step that allocates nothing.
#include "backend/cpu/thread_pool.h"
#include "hearth/gguf.h"
#include "model_harness.h"
#include "pagemap.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <numeric>

using namespace hearth;

// Heap allocations through operator new, counted while g_countAllocations is set (any thread).
namespace {
std::atomic<bool> g_countAllocations{false};
std::atomic<long> g_allocations{0};
} // namespace

void* operator new(std::size_t bytes) {
    if (g_countAllocations.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
    if (void* p = std::malloc(bytes ? bytes : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

struct Comparison : hearth::test::Comparison {
    bool ok = false;
};

// The vocabularies the rows take: Llama 2's 32000 tokens, stories260K's 512.
const QString kSpm = QStringLiteral("ggml-vocab-llama-spm.gguf");
const QString kStories = QStringLiteral("stories260K.gguf");
constexpr double kFloat = 1e-3, kQuant = 5e-2; // tolerances, relative to 1 + max |logit|

// The synthetic rows' columns: preset, weight type, vocabulary file, tolerance.
void columns() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("vocab");
    QTest::addColumn<double>("tolerance");
}
void row(const char* preset, const char* type, const QString& vocab, double tolerance) {
    QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(preset), QLatin1String(type))))
        << QString::fromLatin1(preset) << QString::fromLatin1(type) << vocab << tolerance;
}

Comparison compare(const std::string& path, KvType kvType, int threads) {
    cpu::ThreadPool pool(threads);
    test::LoadOptions o;
    o.device = "cpu";
    o.kvType = kvType;
    o.pool = threads > 1 ? &pool : nullptr;
    Comparison c;
    static_cast<test::Comparison&>(c) = test::compareWithReference(path, o, /*allLogits=*/true);
    c.ok = c.error.empty();
    return c;
}

} // namespace

class TestForwardCpu : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    // `hearth-cli synth` of preset in type (2 layers; gemma4-e-tiny whole, 4) in the test's folder,
    // once per name; empty (with a warning) on failure.
    QString synthesize(const QString& preset, const QString& type, const QString& vocab) {
        const QString path = m_dir.filePath(preset + QStringLiteral("-") + type + QStringLiteral(".gguf"));
        if (QFile::exists(path)) return path;
        QProcess synth;
        synth.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"), type,
                     QStringLiteral("--layers"), preset == QStringLiteral("gemma4-e-tiny") ? QStringLiteral("4") : QStringLiteral("2"),
                     QStringLiteral("--vocab"),
                     QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/") + vocab)),
                     QStringLiteral("-o"), path});
        if (!synth.waitForFinished(300000) || synth.exitCode() != 0) {
            qWarning("synth: %s", synth.readAllStandardError().constData());
            return {};
        }
        return path;
    }

    // The current row (preset, type, vocab, tolerance): the CPU device against the reference.
    void checkRow() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        QFETCH(double, tolerance);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        const QString path = synthesize(preset, type, vocab);
        QVERIFY(!path.isEmpty());
        const Comparison c = compare(path.toStdString(), KvType::F16, 2);
        QVERIFY2(c.ok, c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit,
              c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < tolerance * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QVERIFY(c.argmaxAgree >= c.rows * 9 / 10);
    }

private Q_SLOTS:
    void sharedModels_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("kv");
        QTest::addColumn<int>("threads");
        QTest::newRow("stories260K f32 kv, 1 thread") << QStringLiteral("stories260K.gguf") << int(KvType::F32) << 1;
        QTest::newRow("stories260K f16 kv, 2 threads") << QStringLiteral("stories260K.gguf") << int(KvType::F16) << 2;
        QTest::newRow("stories260K q8_0 kv, 3 threads") << QStringLiteral("stories260K.gguf") << int(KvType::Q8_0) << 3;
        QTest::newRow("llama-2-tiny-random") << QStringLiteral("llama-2-tiny-random.gguf") << int(KvType::F16) << 2;
    }
    void sharedModels() {
        QFETCH(QString, file);
        QFETCH(int, kv);
        QFETCH(int, threads);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + file);
        const Comparison c = compare(hearth::test::testDataPath(QStringLiteral("models/") + file),
                                     KvType(kv), threads);
        QVERIFY2(c.ok, c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit,
              c.argmaxAgree, c.rows);
        // Float weights: the kernels differ from the reference only in summation order.
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // Synthetic models in float and quantized types, a few per test function (each well under a
    // minute). Tolerances are relative to 1 + max |logit|: float weights differ from the reference
    // only in summation order; with quantized ones the kernels also round the activations to 8
    // bits per block. 2-layer cuts of real shapes take the 512-token vocabulary (their layers are
    // what is checked; the output stays small).
    void llamaTiny_data() {
        columns();
        row("llama-tiny", "F16", kSpm, kFloat);
        for (const char* t : {"Q8_0", "Q4_0", "Q4_K_M", "Q6_K", "Q2_K"}) row("llama-tiny", t, kSpm, kQuant);
    }
    void llamaTiny() { checkRow(); }

    // Real models' shapes, in two functions (each ~25 s at the AVX2 level).
    void realShapesQwen_data() {
        columns();
        row("qwen2.5-0.5b", "Q4_K_M", kStories, kQuant);
        row("qwen3-0.6b", "Q8_0", kStories, kQuant);
    }
    void realShapesQwen() { checkRow(); }
    void realShapesGemma3AndPhi4_data() {
        columns();
        row("gemma3-1b", "Q4_K_M", kStories, kQuant);
        row("phi4-mini", "Q8_0", kStories, kQuant);
    }
    void realShapesGemma3AndPhi4() { checkRow(); }

    void tinyArchitectures_data() {
        columns();
        row("gemma3-tiny", "F16", kSpm, kFloat);
        row("gemma3-tiny", "Q8_0", kSpm, kQuant);
        row("qwen3moe-tiny", "F16", kSpm, kFloat);
        row("qwen3moe-tiny", "Q4_K_M", kSpm, kQuant);
        row("gpt-oss-tiny", "F16", kSpm, kFloat);
        row("gpt-oss-tiny", "Q8_0", kSpm, kQuant);
        row("phi3-tiny", "F16", kSpm, kFloat);
        row("phi3-tiny", "Q8_0", kSpm, kQuant);
    }
    void tinyArchitectures() { checkRow(); }

    // gemma4: sliding and full layers of different K/V shapes in one pool, V = K, experts;
    // gemma4-e-tiny whole (4 layers): per-layer embeddings, 2 layers reading earlier K/V.
    void gemma4_data() {
        columns();
        row("gemma4-tiny", "F16", kSpm, kFloat);
        row("gemma4-tiny", "Q8_0", kSpm, kQuant);
        row("gemma4-moe-tiny", "Q8_0", kSpm, kQuant);
        row("gemma4-e-tiny", "F16", kSpm, kFloat);
    }
    void gemma4() { checkRow(); }

    // Decode steps of a mixture-of-experts model (a token at a time: every chosen expert of the
    // step in one parallel job) give the reference's logits, step by step on the reference's
    // greedy history.
    void expertsDecode_data() {
        QTest::addColumn<QString>("type");
        QTest::newRow("F16") << QStringLiteral("F16");
        QTest::newRow("Q4_K_M") << QStringLiteral("Q4_K_M");
    }
    void expertsDecode() {
        QFETCH(QString, type);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + kSpm);
        const QString file = synthesize(QStringLiteral("qwen3moe-tiny"), type, kSpm);
        QVERIFY(!file.isEmpty());
        const std::string path = file.toStdString();
        cpu::ThreadPool pool(2);
        test::LoadOptions o;
        o.device = "cpu";
        o.pool = &pool;
        auto ours = test::loadModel(path, o);
        QVERIFY2(ours.isOk(), ours.status().toString().c_str());
        o.device = "ref";
        o.pool = nullptr;
        auto ref = test::loadModel(path, o);
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        const std::vector<int32_t> prompt{1, 3000, 4000, 5000};
        const test::Greedy b = test::greedy(**ref, prompt, 12);
        const test::Greedy a = test::greedy(**ours, prompt, 12, &b.ids);
        QVERIFY2(a.error.empty() && b.error.empty(), (a.error + b.error).c_str());
        double maxDiff = 0.0, maxLogit = 0.0;
        for (size_t i = 0; i < a.logits.size(); ++i) {
            maxDiff = std::max(maxDiff, double(std::fabs(a.logits[i] - b.logits[i])));
            maxLogit = std::max(maxLogit, double(std::fabs(b.logits[i])));
        }
        int agree = 0;
        for (size_t i = 0; i < a.ids.size(); ++i) agree += a.ids[i] == b.ids[i] ? 1 : 0;
        qInfo("decode: max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", maxDiff, maxLogit, agree, int(a.ids.size()));
        if (type == QStringLiteral("F16")) QCOMPARE(a.ids, b.ids);
        QVERIFY(agree >= int(a.ids.size()) * 9 / 10);
        QVERIFY2(maxDiff < (type == QStringLiteral("F16") ? 1e-3 : 5e-2) * (1.0 + maxLogit), qPrintable(QString::number(maxDiff)));
    }

    // Token-embedding rows are read from the file, not through the mapping: a forward over many
    // tokens leaves none of the (untied) table's pages mapped, and gives the same logits as the
    // model read into memory.
    void embeddingTableStaysUnmapped() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + kSpm);
        const QString path = synthesize(QStringLiteral("llama-tiny"), QStringLiteral("Q4_0"), kSpm);
        QVERIFY(!path.isEmpty());
        auto file = gguf::File::open(path.toStdString());
        gguf::ReadOptions noMap;
        noMap.useMmap = false;
        auto inMemory = gguf::File::open(path.toStdString(), noMap);
        QVERIFY(file.isOk() && inMemory.isOk());
        QVERIFY(file->findTensor("output.weight")); // untied: the table is only looked up
        const gguf::TensorInfo* t = file->findTensor("token_embd.weight");
        const uintptr_t page = 4096, d = reinterpret_cast<uintptr_t>(file->tensorData(*t));
        const uintptr_t first = (d + page - 1) / page, last = (d + t->bytes) / page;
        QVERIFY(last > first + 16);
        const int pm = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (pm < 0) QSKIP("/proc/self/pagemap is not readable here");
        std::vector<float> logits[2];
        int i = 0;
        for (const bool mapped : {true, false}) {
            // The runner repacks the matrices as it loads; the file's own pages are then dropped.
            gguf::ReadOptions ro;
            ro.useMmap = mapped;
            auto f = gguf::File::open(path.toStdString(), ro);
            QVERIFY(f.isOk());
            auto arch = model::loadArchitecture(*f);
            QVERIFY(arch.isOk());
            runtime::RunnerConfig rc;
            rc.device = "cpu";
            rc.numBlocks = 16;
            auto runner = runtime::ModelRunner::create(**arch, rc);
            QVERIFY2(runner.isOk(), runner.status().toString().c_str());
            const int nVocab = (*arch)->dims().nVocab;
            // Opening and loading may have mapped pages (fault-around, huge pages): drop them.
            const uintptr_t d2 = reinterpret_cast<uintptr_t>(f->tensorData(*f->findTensor("token_embd.weight")));
            const uintptr_t first2 = (d2 + page - 1) / page, last2 = (d2 + t->bytes) / page;
            if (mapped)
                QCOMPARE(madvise(reinterpret_cast<void*>(first2 * page), (last2 - first2) * page, MADV_DONTNEED), 0);
            const std::vector<int32_t> table{0, 1, 2, 3, 4, 5, 6, 7};
            graph::Batch b;
            b.blockTables = {table};
            for (int p = 0; p < 120; ++p) b.tokens.push_back({(p * 7919 + 5) % nVocab, p, 0, p == 119});
            QVERIFY((*runner)->forward(b, logits[i++]).isOk());
            if (mapped) QCOMPARE(hearth::test::presentPages(pm, first2, last2), 0);
        }
        ::close(pm);
        QVERIFY(!logits[0].empty());
        QCOMPARE(logits[0], logits[1]);
    }

    // Once a decode step has run, the next one (one token further, two threads, repacked
    // quantized weights) allocates nothing on the heap.
    void decodeStepAllocatesNothingOnceWarm() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + kSpm);
        const QString path = synthesize(QStringLiteral("llama-tiny"), QStringLiteral("Q4_0"), kSpm);
        QVERIFY(!path.isEmpty());
        cpu::ThreadPool pool(2);
        test::LoadOptions o;
        o.device = "cpu";
        o.kvType = KvType::F16;
        o.numBlocks = 16;
        o.pool = &pool;
        auto m = test::loadModel(path.toStdString(), o);
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        const int nVocab = (*m)->dims().nVocab;
        const std::vector<int32_t> table{0, 1, 2, 3};
        auto batchAt = [&](int from, int to) {
            graph::Batch b;
            b.blockTables = {table};
            for (int p = from; p < to; ++p) b.tokens.push_back({(p * 7919 + 5) % nVocab, p, 0, p + 1 == to});
            return b;
        };
        std::vector<float> logits;
        QVERIFY((*m)->runner->forward(batchAt(0, 20), logits).isOk());
        // Warm: each worker grows its own scratch the first time it takes a piece of an op, and
        // which worker takes which piece varies from step to step, so one warm step left a
        // worker cold now and then (one allocation in the counted step, seen once under load).
        for (int p = 20; p < 28; ++p) QVERIFY((*m)->runner->forward(batchAt(p, p + 1), logits).isOk());
        const graph::Batch next = batchAt(28, 29);
        g_allocations = 0;
        g_countAllocations = true;
        const Status s = (*m)->runner->forward(next, logits);
        g_countAllocations = false;
        QVERIFY(s.isOk());
        QCOMPARE(logits.size(), size_t(nVocab));
        QCOMPARE(g_allocations.load(), 0L);
    }
};

QTEST_GUILESS_MAIN(TestForwardCpu)
#include "test_forward_cpu.moc"
