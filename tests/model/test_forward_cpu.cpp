// The optimized CPU forward (batched matMul kernels, threads) against the scalar reference
// forward on the same batches: stories260K (F32), llama-2-tiny-random, and synthetic llama-tiny,
// qwen2.5 and qwen3 cuts in float and quantized types. A batch mixes a prefill of one sequence
// with tokens of another whose blocks are scattered, so paging and batching are both exercised.
#include "backend/cpu/paged_kv.h"
#include "backend/cpu/thread_pool.h"
#include "hearth/gguf.h"
#include "model/llama_model.h"
#include "pagemap.h"
#include "logit_diff.h"
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

struct Comparison : hearth::test::LogitDiff {
    bool ok = false;
    std::string error;
};

Comparison compare(const std::string& path, KvType kvType, int threads) {
    Comparison c;
    auto file = gguf::File::open(path);
    if (!file) return c.error = file.status().toString(), c;
    auto model = model::LlamaModel::load(*file);
    if (!model) return c.error = model.status().toString(), c;
    const auto& hp = (*model)->hparams();
    // Sequence 0: 37 prompt tokens; sequence 1: 21 tokens in blocks taken from the far end.
    std::vector<int32_t> t0{1}, t1{1};
    for (int i = 0; i < 36; ++i) t0.push_back((i * 7919 + 13) % (hp.nVocab - 300) + 256);
    for (int i = 0; i < 20; ++i) t1.push_back((i * 104729 + 71) % (hp.nVocab - 300) + 256);
    const std::vector<int32_t> table0{0, 1, 2}, table1{7, 5};
    auto makeBatch = [&](int from0, int to0, int from1, int to1) {
        model::Batch b;
        b.blockTables = {table0, table1};
        for (int p = from0; p < to0; ++p) b.tokens.push_back({t0[size_t(p)], p, 0, true});
        for (int p = from1; p < to1; ++p) b.tokens.push_back({t1[size_t(p)], p, 1, true});
        return b;
    };
    auto refStore = cpu::PagedKvStore::create(hp.nLayer, 8, 16, hp.nHeadKv, hp.headDim, kvType);
    auto cpuStore = cpu::PagedKvStore::create(hp.nLayer, 8, 16, hp.nHeadKv, hp.headDim, kvType);
    if (!refStore || !cpuStore) return c.error = "store", c;
    cpu::ThreadPool pool(threads);
    // Two steps: prefill chunks of both, then the rest (history read back from the cache).
    for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21}}) {
        const model::Batch batch = makeBatch(a0, b0, a1, b1);
        std::vector<float> ref, ours;
        Status s = (*model)->forward(batch, *refStore, ref);
        if (!s.isOk()) return c.error = s.toString(), c;
        s = (*model)->forwardCpu(batch, *cpuStore, ours, threads > 1 ? &pool : nullptr);
        if (!s.isOk()) return c.error = s.toString(), c;
        if (!c.add(ref, ours, size_t(hp.nVocab))) return c.error = "logit count differs", c;
    }
    c.ok = true;
    return c;
}

} // namespace

class TestForwardCpu : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

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

    void syntheticModels_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<double>("tolerance"); // relative to 1 + max |logit|
        const QString spm = QStringLiteral("ggml-vocab-llama-spm.gguf"), qwen = QStringLiteral("ggml-vocab-qwen2.gguf");
        for (const char* t : {"F16"})
            QTest::newRow(qPrintable(QStringLiteral("llama-tiny ") + t)) << QStringLiteral("llama-tiny") << QString::fromLatin1(t) << spm << 1e-3;
        // Quantized weights: the kernels also round the activations to 8 bits per block.
        for (const char* t : {"Q8_0", "Q4_0", "Q4_K_M", "Q6_K", "Q2_K"})
            QTest::newRow(qPrintable(QStringLiteral("llama-tiny ") + t)) << QStringLiteral("llama-tiny") << QString::fromLatin1(t) << spm << 5e-2;
        QTest::newRow("qwen2.5 Q4_K_M") << QStringLiteral("qwen2.5-0.5b") << QStringLiteral("Q4_K_M") << qwen << 5e-2;
        QTest::newRow("qwen3 Q8_0") << QStringLiteral("qwen3-0.6b") << QStringLiteral("Q8_0") << qwen << 5e-2;
    }
    void syntheticModels() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        QFETCH(double, tolerance);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        const QString path = m_dir.filePath(preset + QStringLiteral("-") + type + QStringLiteral(".gguf"));
        QProcess synth;
        synth.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"), type,
                     QStringLiteral("--layers"), QStringLiteral("2"), QStringLiteral("--vocab"),
                     QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/") + vocab)),
                     QStringLiteral("-o"), path});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
        const Comparison c = compare(path.toStdString(), KvType::F16, 2);
        QVERIFY2(c.ok, c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit,
              c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < tolerance * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QVERIFY(c.argmaxAgree >= c.rows * 9 / 10);
    }

    // Token-embedding rows are read from the file, not through the mapping: a forward over many
    // tokens leaves none of the (untied) table's pages mapped, and gives the same logits as the
    // model read into memory. Runs after syntheticModels, which wrote the file.
    void embeddingTableStaysUnmapped() {
        const QString path = m_dir.filePath(QStringLiteral("llama-tiny-Q4_0.gguf"));
        if (!QFile::exists(path)) QSKIP("llama-tiny-Q4_0.gguf was not synthesized (shared vocab absent)");
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
        auto present = [&] { return hearth::test::presentPages(pm, first, last); };
        std::vector<float> logits[2];
        int i = 0;
        for (const gguf::File* f : {&*file, &*inMemory}) {
            auto model = model::LlamaModel::load(*f);
            QVERIFY(model.isOk());
            const auto& hp = (*model)->hparams();
            auto store = cpu::PagedKvStore::create(hp.nLayer, 16, 16, hp.nHeadKv, hp.headDim, KvType::F16);
            QVERIFY(store.isOk());
            QVERIFY((*model)->prepareCpu(nullptr).isOk());
            // Opening and loading may have mapped pages (fault-around, huge pages): drop them.
            if (f == &*file)
                QCOMPARE(madvise(reinterpret_cast<void*>(first * page), (last - first) * page, MADV_DONTNEED), 0);
            const std::vector<int32_t> table{0, 1, 2, 3, 4, 5, 6, 7};
            model::Batch b;
            b.blockTables = {table};
            for (int p = 0; p < 120; ++p) b.tokens.push_back({(p * 7919 + 5) % hp.nVocab, p, 0, p == 119});
            QVERIFY((*model)->forwardCpu(b, *store, logits[i++], nullptr).isOk());
            if (f == &*file) QCOMPARE(present(), 0);
        }
        ::close(pm);
        QVERIFY(!logits[0].empty());
        QCOMPARE(logits[0], logits[1]);
    }

    // Once a decode step has run, the next one (one token further, two threads, repacked
    // quantized weights) allocates nothing on the heap. Runs after syntheticModels.
    void decodeStepAllocatesNothingOnceWarm() {
        const QString path = m_dir.filePath(QStringLiteral("llama-tiny-Q4_0.gguf"));
        if (!QFile::exists(path)) QSKIP("llama-tiny-Q4_0.gguf was not synthesized (shared vocab absent)");
        auto file = gguf::File::open(path.toStdString());
        QVERIFY(file.isOk());
        auto model = model::LlamaModel::load(*file);
        QVERIFY(model.isOk());
        const auto& hp = (*model)->hparams();
        auto store = cpu::PagedKvStore::create(hp.nLayer, 16, 16, hp.nHeadKv, hp.headDim, KvType::F16);
        QVERIFY(store.isOk());
        cpu::ThreadPool pool(2);
        const std::vector<int32_t> table{0, 1, 2, 3};
        auto batchAt = [&](int from, int to) {
            model::Batch b;
            b.blockTables = {table};
            for (int p = from; p < to; ++p) b.tokens.push_back({(p * 7919 + 5) % hp.nVocab, p, 0, p + 1 == to});
            return b;
        };
        std::vector<float> logits;
        QVERIFY((*model)->forwardCpu(batchAt(0, 20), *store, logits, &pool).isOk());
        QVERIFY((*model)->forwardCpu(batchAt(20, 21), *store, logits, &pool).isOk()); // warm
        const model::Batch next = batchAt(21, 22);
        g_allocations = 0;
        g_countAllocations = true;
        const Status s = (*model)->forwardCpu(next, *store, logits, &pool);
        g_countAllocations = false;
        QVERIFY(s.isOk());
        QCOMPARE(logits.size(), size_t(hp.nVocab));
        QCOMPARE(g_allocations.load(), 0L);
    }
};

QTEST_GUILESS_MAIN(TestForwardCpu)
#include "test_forward_cpu.moc"
