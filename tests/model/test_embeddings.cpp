// Embeddings through the engine API: agreement with llama.cpp (node-llama-cpp's embedding
// context, tests/tools/ref_embed.mjs) on stories260K (mean pooling written into a copy, and the
// last token) and on synthesized files with the Qwen2 vocabulary (Qwen3-style with last and CLS
// pooling, a Qwen3.5-style hybrid with mean pooling);
// batching (several inputs in one request, chunked long inputs, embeddings beside generation give
// what they give alone), options (no normalization, dimensions) and bad inputs.
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "engine_device_checks.h"
#include "reference_embeddings.h"
#include "test_support.h"
#include "token_collector.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace hearth;

namespace hearth::test {
// Keeps an embedding request's outcome for a test to wait on.
struct EmbeddingWaiter final : EmbeddingSink {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Status error;
    std::vector<std::vector<float>> vectors;
    void onEmbeddings(EmbeddingResult r) override {
        std::lock_guard<std::mutex> lock(mu);
        vectors = std::move(r.vectors);
        done = true;
        cv.notify_all();
    }
    void onError(const Status& e) override {
        std::lock_guard<std::mutex> lock(mu);
        error = e;
        done = true;
        cv.notify_all();
    }
    bool wait() {
        std::unique_lock<std::mutex> lock(mu);
        return cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; });
    }
};
} // namespace hearth::test

namespace {

using test::cosine;
using test::maxAbsDiff;
using test::normalized;
using test::referenceEmbedding;
using Reference = test::ReferenceEmbedding;

std::unique_ptr<Engine> openEngine(const std::string& path, int maxBatchedTokens = 512) {
    EngineConfig c;
    c.modelPath = path;
    c.contextLength = 256;
    c.kvMemoryBytes = 16ull << 20;
    c.kvType = KvType::F32;
    c.maxBatchedTokens = maxBatchedTokens;
    auto e = Engine::create(c);
    if (!e) qWarning("%s", e.status().toString().c_str());
    return e ? std::move(*e) : nullptr;
}

EmbeddingRequest request(std::vector<std::vector<int32_t>> inputs, Pooling pooling = Pooling::Model) {
    EmbeddingRequest r;
    r.inputs = std::move(inputs);
    r.pooling = pooling;
    return r;
}

// A copy of `from` with <arch>.pooling_type set.
Status withPooling(const std::string& from, const std::string& to, uint32_t pooling) {
    HEARTH_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(from));
    gguf::Writer w;
    for (const gguf::KeyValue& kv : f.metadata()) w.set(kv.key, kv.value);
    w.set(f.getString("general.architecture").value() + ".pooling_type", gguf::Value::u32(pooling));
    for (const gguf::TensorInfo& t : f.tensors()) {
        const uint8_t* p = f.tensorData(t);
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
        HEARTH_RETURN_IF_ERROR(w.addTensor(t.name, t.type, shape, std::vector<uint8_t>(p, p + t.bytes)));
    }
    return w.writeFile(to);
}

// Tolerance against llama.cpp after normalization (fp32 weights, F32 K/V): per component.
constexpr double kMaxDiff = 2e-3, kMinCosine = 0.9999;

} // namespace

class TestEmbeddings : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> m_engine; // stories260K, prompts chunked by 64 tokens
    QTemporaryDir m_dir;
    std::string m_stories;

    std::vector<float> embedOne(Engine& e, std::vector<int32_t> ids, Pooling p = Pooling::Model, bool norm = true) {
        EmbeddingRequest r = request({std::move(ids)}, p);
        r.normalize = norm;
        auto res = embedAndWait(e, std::move(r));
        if (!res) qWarning("%s", res.status().toString().c_str());
        return res ? res->vectors.at(0) : std::vector<float>{};
    }

    // Ours against llama.cpp's for `text` on `model` (whose pooling is the file's).
    void compareWithReference(const std::string& model, const QString& text, Pooling ours) {
        if (const QString why = test::referenceEmbeddingsMissing(); !why.isEmpty()) QSKIP(qPrintable(why));
        QString err;
        const Reference ref = referenceEmbedding(QString::fromStdString(model), text, {}, err);
        QVERIFY2(!ref.tokens.empty(), qPrintable(QStringLiteral("ref_embed.mjs failed: ") + err));
        auto engine = openEngine(model);
        QVERIFY(engine);
        // Our tokenizer gives the ids llama.cpp evaluated (BOS/EOS as the vocabulary says).
        auto ids = engine->tokenizer().encode(text.toStdString(), true, false);
        QVERIFY(ids.isOk());
        QCOMPARE(*ids, ref.tokens);
        const std::vector<float> raw = embedOne(*engine, ref.tokens, ours, false);
        QCOMPARE(raw.size(), ref.vector.size());
        const std::vector<float> mine = embedOne(*engine, ref.tokens, ours, true);
        const std::vector<float> theirs = normalized(ref.vector);
        const double cos = cosine(mine, theirs), diff = maxAbsDiff(mine, theirs);
        qInfo("%s, %zu tokens, %s pooling: cosine %.8f, max |diff| %.2e (normalized), raw max |diff| %.2e",
              model.c_str(), ref.tokens.size(), poolingName(ours), cos, diff, maxAbsDiff(raw, ref.vector));
        QVERIFY2(cos >= kMinCosine, qPrintable(QString::number(cos, 'g', 10)));
        QVERIFY2(diff <= kMaxDiff, qPrintable(QString::number(diff)));
        // Negative control: another pooling differs well beyond the tolerance.
        const Pooling resolved = ours == Pooling::Model ? engine->model().pooling : ours;
        const Pooling other = resolved == Pooling::Last ? Pooling::Mean : Pooling::Last;
        QVERIFY(maxAbsDiff(embedOne(*engine, ref.tokens, other), theirs) > 10 * kMaxDiff);
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        m_stories = hearth::test::testDataPath("models/stories260K.gguf");
        m_engine = openEngine(m_stories, 64);
        QVERIFY(m_engine);
        QCOMPARE(m_engine->model().pooling, Pooling::Mean); // no pooling_type: mean
    }

    void storiesMeanMatchesLlamaCpp() {
        const std::string copy = m_dir.filePath(QStringLiteral("stories-mean.gguf")).toStdString();
        QVERIFY(withPooling(m_stories, copy, 1).isOk());
        compareWithReference(copy, QStringLiteral("Once upon a time, there was a little girl named Lily."),
                             Pooling::Model);
    }

    void storiesLastMatchesLlamaCpp() {
        // Without pooling_type llama.cpp pools nothing and node-llama-cpp takes the last row.
        compareWithReference(m_stories, QStringLiteral("The cat sat on the mat."), Pooling::Last);
    }

    void synthesizedMatchesLlamaCpp_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("pooling");
        QTest::addColumn<int>("expected");
        // Qwen3-Embedding files pool the last token; the others cover CLS and a hybrid model
        // (gated delta-net layers before full attention) with mean pooling.
        QTest::newRow("qwen3-tiny last") << QStringLiteral("qwen3-tiny") << 3 << int(Pooling::Last);
        QTest::newRow("qwen3-tiny cls") << QStringLiteral("qwen3-tiny") << 2 << int(Pooling::Cls);
        QTest::newRow("qwen35-tiny mean") << QStringLiteral("qwen35-tiny") << 1 << int(Pooling::Mean);
    }
    void synthesizedMatchesLlamaCpp() {
        QFETCH(QString, preset);
        QFETCH(int, pooling);
        QFETCH(int, expected);
        const QString path = m_dir.filePath(preset + QStringLiteral("-%1.gguf").arg(pooling));
        QProcess synth;
        synth.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"),
                     QStringLiteral("F32"), QStringLiteral("--pooling"), QString::number(pooling),
                     QStringLiteral("--vocab"),
                     QString::fromStdString(hearth::test::testDataPath("models/ggml-vocab-qwen2.gguf")),
                     QStringLiteral("-o"), path});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
        auto e = openEngine(path.toStdString());
        QVERIFY(e);
        QCOMPARE(int(e->model().pooling), expected);
        e.reset();
        compareWithReference(path.toStdString(), QStringLiteral("Embeddings of a synthesized model, 2026 édition."),
                             Pooling::Model);
    }

    void severalInputsMatchOneByOne() {
        const std::vector<std::vector<int32_t>> inputs{
            {1, 403, 407, 261, 378}, {1, 29, 30, 31}, {1, 500}, std::vector<int32_t>(150, 300)};
        auto all = embedAndWait(*m_engine, request(inputs));
        QVERIFY2(all.isOk(), all.status().toString().c_str());
        QCOMPARE(all->vectors.size(), inputs.size());
        QCOMPARE(all->promptTokens, 5 + 4 + 2 + 150);
        for (size_t i = 0; i < inputs.size(); ++i) {
            const std::vector<float> one = embedOne(*m_engine, inputs[i]);
            QCOMPARE(one.size(), size_t(m_engine->model().nEmbd));
            QVERIFY2(maxAbsDiff(one, all->vectors[i]) < 1e-5, qPrintable(QString::number(i)));
            double n = 0;
            for (float x : one) n += double(x) * x;
            QVERIFY(std::fabs(n - 1.0) < 1e-5);
        }
        // Inputs differ, and so do their vectors (a negative control for the comparison above).
        QVERIFY(maxAbsDiff(all->vectors[0], all->vectors[1]) > 1e-2);
    }

    void embeddingsBesideGenerationChangeNothing() {
        const std::vector<int32_t> ids{1, 403, 407, 261, 378};
        const std::vector<float> alone = embedOne(*m_engine, ids);
        auto gen = std::make_shared<test::TokenCollector>();
        QVERIFY(m_engine->submit(test::greedyRequest(test::kStoriesPrompt, gen, 64)).isOk());
        std::vector<std::shared_ptr<Result<EmbeddingResult>>> results;
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            auto slot = std::make_shared<Result<EmbeddingResult>>(internalError("not run"));
            results.push_back(slot);
            threads.emplace_back([&, slot] { *slot = embedAndWait(*m_engine, request({ids, ids, ids})); });
        }
        for (auto& t : threads) t.join();
        QVERIFY(gen->waitDone());
        QCOMPARE(gen->tokens(), test::kStoriesGreedy);
        for (const auto& r : results) {
            QVERIFY2(r->isOk(), r->status().toString().c_str());
            for (const auto& v : (*r)->vectors) QVERIFY(maxAbsDiff(v, alone) < 1e-5);
        }
    }

    void dimensionsCutThenNormalize() {
        const std::vector<int32_t> ids{1, 403, 407};
        const std::vector<float> raw = embedOne(*m_engine, ids, Pooling::Model, false);
        EmbeddingRequest r = request({ids});
        r.dimensions = 16;
        auto cut = embedAndWait(*m_engine, std::move(r));
        QVERIFY(cut.isOk());
        QCOMPARE(cut->vectors[0].size(), size_t(16));
        const std::vector<float> want = normalized(std::vector<float>(raw.begin(), raw.begin() + 16));
        QVERIFY(maxAbsDiff(cut->vectors[0], want) < 1e-6);
    }

    void preemptedInputsStartOver() {
        // A KV cache of 24 blocks of 16 for 8 inputs of 150 tokens (10 blocks each), chunked by 64:
        // sequences are preempted and recomputed, and their pooled sums must start over.
        EngineConfig c;
        c.modelPath = m_stories;
        c.contextLength = 256;
        c.kvType = KvType::F32;
        c.kvMemoryBytes = 24 * (m_engine->model().kvBytes / uint64_t(m_engine->stats().kvBlocksTotal));
        c.maxBatchedTokens = 64;
        auto small = Engine::create(c);
        QVERIFY2(small.isOk(), small.status().toString().c_str());
        std::vector<std::vector<int32_t>> inputs;
        for (int i = 0; i < 8; ++i) {
            std::vector<int32_t> ids{1};
            for (int k = 1; k < 150; ++k) ids.push_back(int32_t(300 + (i * 31 + k * 7) % 200));
            inputs.push_back(std::move(ids));
        }
        QCOMPARE((*small)->stats().kvBlocksTotal, 24);
        auto all = embedAndWait(**small, request(inputs));
        QVERIFY2(all.isOk(), all.status().toString().c_str());
        for (size_t i = 0; i < inputs.size(); ++i)
            QVERIFY2(maxAbsDiff(all->vectors[i], embedOne(*m_engine, inputs[i])) < 1e-5, qPrintable(QString::number(i)));
    }

    void cancelStopsARequest() {
        auto sink = std::make_shared<test::EmbeddingWaiter>();
        EmbeddingRequest r = request(std::vector<std::vector<int32_t>>(2000, std::vector<int32_t>(200, 300)));
        r.sink = sink;
        auto id = m_engine->embed(std::move(r));
        QVERIFY(id.isOk());
        m_engine->cancel(*id);
        QVERIFY(sink->wait());
        QCOMPARE(sink->error.code(), ErrorCode::Cancelled);
        QVERIFY(sink->vectors.empty());
        QTRY_VERIFY(m_engine->stats().running == 0 && m_engine->stats().waiting == 0);
        QVERIFY(embedAndWait(*m_engine, request({{1, 2, 3}})).isOk());
    }

    void cost() {
        // 32 inputs of 128 tokens embedded, against 32 other prompts of 128 tokens generating one
        // token each (the same work but for the output head; other ids, so no prefix is reused),
        // one thread, alternating, A B A B A B; the best of each.
        auto prompts = [](int salt) {
            std::vector<std::vector<int32_t>> v;
            for (int i = 0; i < 32; ++i) {
                std::vector<int32_t> ids{1};
                for (int k = 1; k < 128; ++k) ids.push_back(int32_t(300 + (i * 13 + k * 5 + salt * 7) % 200));
                v.push_back(std::move(ids));
            }
            return v;
        };
        EngineConfig c;
        c.modelPath = m_stories;
        c.contextLength = 256;
        c.threads = 1;
        c.prefixCaching = false;
        auto engine = Engine::create(c);
        QVERIFY(engine.isOk());
        using Ms = std::chrono::duration<double, std::milli>;
        double embedMs = 1e9, genMs = 1e9;
        for (int run = 0; run < 3; ++run) {
            const auto t0 = std::chrono::steady_clock::now();
            auto res = embedAndWait(**engine, request(prompts(0)));
            embedMs = std::min(embedMs, Ms(std::chrono::steady_clock::now() - t0).count());
            QVERIFY(res.isOk());
            std::vector<std::shared_ptr<test::TokenCollector>> sinks;
            const auto t1 = std::chrono::steady_clock::now();
            for (const auto& ids : prompts(0)) {
                sinks.push_back(std::make_shared<test::TokenCollector>());
                QVERIFY((*engine)->submit(test::greedyRequest(ids, sinks.back(), 1)).isOk());
            }
            for (auto& sk : sinks) QVERIFY(sk->waitDone());
            genMs = std::min(genMs, Ms(std::chrono::steady_clock::now() - t1).count());
        }
        qInfo("stories260K, 1 thread, 32 x 128 tokens: embeddings %.1f ms (%.0f tokens/s); the same prompts "
              "generating 1 token each: %.1f ms",
              embedMs, 4096.0 / embedMs * 1000.0, genMs);
    }

    void badInputsAreRefused() {
        const int vocab = m_engine->model().nVocab, ctx = m_engine->model().contextLength;
        auto code = [&](EmbeddingRequest r) { return embedAndWait(*m_engine, std::move(r)).status().code(); };
        QCOMPARE(code(request({})), ErrorCode::InvalidArgument);
        QCOMPARE(code(request({{1, 2}, {}})), ErrorCode::InvalidArgument);
        QCOMPARE(code(request({{1, vocab}})), ErrorCode::InvalidArgument);
        QCOMPARE(code(request({{-1}})), ErrorCode::InvalidArgument);
        QCOMPARE(code(request({std::vector<int32_t>(size_t(ctx) + 1, 5)})), ErrorCode::OutOfRange);
        EmbeddingRequest wide = request({{1, 2}});
        wide.dimensions = m_engine->model().nEmbd + 1;
        QCOMPARE(code(std::move(wide)), ErrorCode::InvalidArgument);
        QCOMPARE(m_engine->embed(request({{1}})).status().code(), ErrorCode::InvalidArgument); // no sink
        // The longest input the context holds works.
        QVERIFY(embedAndWait(*m_engine, request({std::vector<int32_t>(size_t(ctx), 5)})).isOk());
        QTRY_VERIFY(m_engine->stats().running == 0 && m_engine->stats().waiting == 0);
    }
};

QTEST_GUILESS_MAIN(TestEmbeddings)
#include "test_embeddings.moc"
