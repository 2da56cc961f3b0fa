// The bert encoder through the engine's embeddings: a synthesized bert-tiny (the BGE WordPiece
// vocabulary) against llama.cpp (tests/tools/ref_embed.mjs) for short and long texts with CLS and
// mean pooling (F32; F16 and quantized within a looser bound), batched inputs against one by one,
// GPUs against the CPU, each input computed in one step (inputs longer than a step or than the
// learned positions refused), generation refused, and malformed files refused by name.
// Negative controls: the other pooling, and a causal mask, must both miss llama.cpp's vectors.
#include "hearth/devices.h"
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "encoder_test_support.h"
#include "gguf_rewrite.h"
#include "reference_embeddings.h"
#include "test_support.h"

#include <QDir>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <functional>

using namespace hearth;

namespace {

using test::cosine;
using test::maxAbsDiff;
using test::normalized;
using test::referenceEmbedding;
using test::rewriteGguf;
using Reference = test::ReferenceEmbedding;
using test::embedOne;
using test::kLong;
using test::openEngine;
using test::request;



// Tolerance against llama.cpp after normalization (F32 weights and K/V), as for the decoders.
constexpr double kMaxDiff = 2e-3, kMinCosine = 0.9999;


} // namespace

class TestBert : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model;   // bert-tiny, CLS pooling, bert.attention.causal false
    std::unique_ptr<Engine> m_engine;


    std::string path(const char* name) const { return m_dir.filePath(QString::fromUtf8(name)).toStdString(); }

    // Ours (on `ours`, default: the same file) against llama.cpp's for `text` on `model`; returns
    // false (with figures logged) when they disagree, after checking the token ids are the same.
    void compare(const std::string& model, const QString& text, bool& agree, const std::string& ours = {},
                 Pooling pooling = Pooling::Model, double minCosine = kMinCosine, double maxDiff = kMaxDiff) {
        QString err;
        const Reference ref = referenceEmbedding(QString::fromStdString(model), text, {}, err);
        QVERIFY2(!ref.tokens.empty(), qPrintable(QStringLiteral("ref_embed.mjs failed: ") + err));
        auto engine = openEngine(ours.empty() ? model : ours);
        QVERIFY2(engine.isOk(), engine.status().toString().c_str());
        auto ids = (*engine)->tokenizer().encode(text.toStdString(), true, false);
        QVERIFY(ids.isOk());
        QCOMPARE(*ids, ref.tokens); // [CLS] ... [SEP], as llama.cpp evaluates
        const std::vector<float> mine = embedOne(**engine, ref.tokens, pooling);
        QCOMPARE(mine.size(), ref.vector.size());
        const std::vector<float> theirs = normalized(ref.vector);
        const double cos = cosine(mine, theirs), diff = maxAbsDiff(mine, theirs);
        qInfo("%zu tokens, %s pooling%s: cosine %.8f, max |diff| %.2e (normalized)", ref.tokens.size(),
              poolingName(pooling == Pooling::Model ? (*engine)->model().pooling : pooling),
              ours.empty() ? "" : " (ours on a changed copy)", cos, diff);
        agree = cos >= minCosine && diff <= maxDiff;
    }

private Q_SLOTS:
    void initTestCase() {
        const QString use = test::bgeVocabPath();
        if (qEnvironmentVariableIsEmpty("HEARTH_REF") || !QFile::exists(use))
            QSKIP("no BGE vocabulary: set HEARTH_REF to the reference folder (llama.cpp-src/models/ggml-vocab-bert-bge.gguf)");
        m_model = path("bert-tiny.gguf");
        const QString err = test::synthPreset(QStringLiteral("bert-tiny"), QStringLiteral("F32"), use, m_model);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        auto e = openEngine(m_model);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        m_engine = std::move(*e);
        QCOMPARE(m_engine->model().architecture, std::string("bert"));
        QCOMPARE(m_engine->model().pooling, Pooling::Cls);
        QVERIFY(m_engine->model().embeddingsOnly);
    }

    void matchesLlamaCpp_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("pooling"); // the file's pooling_type
        QTest::newRow("cls short") << QStringLiteral("Hello world") << 2;
        QTest::newRow("cls sentence") << QStringLiteral("What is the capital of France? Paris, of course.") << 2;
        QTest::newRow("cls long") << QString::fromUtf8(kLong) << 2;
        QTest::newRow("mean sentence") << QStringLiteral("What is the capital of France? Paris, of course.") << 1;
        QTest::newRow("mean long") << QString::fromUtf8(kLong) << 1;
    }
    void matchesLlamaCpp() {
        if (const QString why = test::referenceEmbeddingsMissing(); !why.isEmpty()) QSKIP(qPrintable(why));
        QFETCH(QString, text);
        QFETCH(int, pooling);
        std::string model = m_model;
        if (pooling != 2) {
            model = path("bert-tiny-mean.gguf");
            if (!QFile::exists(QString::fromStdString(model)))
                QVERIFY(rewriteGguf(m_model, model, [](gguf::Writer& w) { w.set("bert.pooling_type", gguf::Value::u32(1)); }).isOk());
        }
        bool agree = false;
        compare(model, text, agree);
        QVERIFY(agree);
        // Negative control: the other pooling misses llama.cpp's vector.
        bool other = true;
        compare(model, text, other, {}, pooling == 2 ? Pooling::Mean : Pooling::Cls);
        QVERIFY(!other);
    }

    // Quantized and half-precision weights: llama.cpp and we round activations differently for
    // them (8-bit activations against quantized weights in both, rounded in different places), so
    // the bound is looser: measured cosine >= 0.99987, max |diff| <= 3.2e-3 (Q4_K_M, Q8_0).
    void quantizedMatchesLlamaCpp_data() {
        QTest::addColumn<QString>("type");
        QTest::newRow("F16") << QStringLiteral("F16");
        QTest::newRow("Q8_0") << QStringLiteral("Q8_0");
        QTest::newRow("Q4_K_M") << QStringLiteral("Q4_K_M");
    }
    void quantizedMatchesLlamaCpp() {
        if (const QString why = test::referenceEmbeddingsMissing(); !why.isEmpty()) QSKIP(qPrintable(why));
        QFETCH(QString, type);
        const std::string model = path(("bert-tiny-" + type.toStdString() + ".gguf").c_str());
        QProcess synth;
        synth.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("bert-tiny"),
                     QStringLiteral("--type"), type, QStringLiteral("--vocab"),
                     qEnvironmentVariable("HEARTH_REF") + QStringLiteral("/llama.cpp-src/models/ggml-vocab-bert-bge.gguf"),
                     QStringLiteral("-o"), QString::fromStdString(model)});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
        for (const char* text : {"What is the capital of France? Paris, of course.", kLong}) {
            bool agree = false;
            compare(model, QString::fromUtf8(text), agree, {}, Pooling::Model, 0.9995, 1e-2);
            QVERIFY(agree);
        }
    }

    // With a causal mask (the same weights, bert.attention.causal true) ours misses llama.cpp's.
    void causalMaskMisses() {
        if (const QString why = test::referenceEmbeddingsMissing(); !why.isEmpty()) QSKIP(qPrintable(why));
        const std::string causal = path("bert-tiny-causal.gguf");
        QVERIFY(rewriteGguf(m_model, causal, [](gguf::Writer& w) { w.set("bert.attention.causal", gguf::Value::boolean(true)); }).isOk());
        bool agree = true;
        // CLS would see only itself under the mask; mean pooling shows the mask everywhere.
        compare(m_model, QStringLiteral("What is the capital of France? Paris, of course."), agree, causal, Pooling::Mean);
        QVERIFY(!agree);
    }

    // Several inputs of different lengths in one step give what each gives alone.
    void batchedInputsMatchOneByOne() {
        const QString bad = test::batchedMismatch(*m_engine, {"Hello world", "What is the capital of France?", kLong, "a"},
                                                  {Pooling::Cls, Pooling::Mean});
        QVERIFY2(bad.isEmpty(), qPrintable(bad));
    }

    // A step of 64 tokens: inputs of up to 64 are computed whole (several steps for a request), a
    // longer one is refused with a clear error rather than chunked.
    void inputsAreNeverChunked() {
        auto small = openEngine(m_model, 64);
        QVERIFY2(small.isOk(), small.status().toString().c_str());
        std::vector<std::vector<int32_t>> inputs;
        for (int len : {60, 64, 30, 50}) {
            std::vector<int32_t> ids(size_t(len), 2000);
            for (int i = 0; i < len; ++i) ids[size_t(i)] = 2000 + (i * 37) % 5000;
            inputs.push_back(ids);
        }
        auto got = embedAndWait(**small, request(inputs, Pooling::Mean));
        QVERIFY2(got.isOk(), got.status().toString().c_str());
        for (size_t i = 0; i < inputs.size(); ++i)
            QVERIFY(maxAbsDiff(got->vectors[i], embedOne(*m_engine, inputs[i], Pooling::Mean)) < 1e-5);
        auto tooLong = embedAndWait(**small, request({std::vector<int32_t>(65, 2000)}));
        QCOMPARE(tooLong.status().code(), ErrorCode::OutOfRange);
        QVERIFY2(tooLong.status().message().find("one step") != std::string::npos, tooLong.status().toString().c_str());
    }

    // The 512 learned positions bound the context whatever the engine is asked for: 512 tokens
    // work, 513 are refused up front (not a failed step).
    void positionsBoundTheContext() {
        auto wide = openEngine(m_model, 1024, "cpu", 2048);
        QVERIFY2(wide.isOk(), wide.status().toString().c_str());
        QCOMPARE((*wide)->model().contextLength, 512);
        QVERIFY(embedAndWait(**wide, request({std::vector<int32_t>(512, 2000)})).isOk());
        auto over = embedAndWait(**wide, request({std::vector<int32_t>(513, 2000)}));
        QCOMPARE(over.status().code(), ErrorCode::OutOfRange);
        QVERIFY2(over.status().message().find("context length of 512") != std::string::npos, over.status().toString().c_str());
    }

    // Each GPU this machine has runs the layers' other ops and leaves attention without the
    // causal mask to the CPU (its K/V too): the same vectors as the CPU alone.
    void gpuDevicesAgree() {
        const DeviceList list = listDevices();
        std::vector<std::string> gpus;
        for (const DeviceDescription& d : list.devices)
            if (d.kind != DeviceKind::Cpu) gpus.push_back(d.id);
        if (gpus.empty()) QSKIP("no GPU device on this machine");
        std::vector<std::vector<int32_t>> inputs;
        for (const char* t : {"Hello world", kLong}) inputs.push_back(m_engine->tokenizer().encode(t, true, false).value());
        for (const std::string& id : gpus) {
            auto gpu = openEngine(m_model, 512, id);
            QVERIFY2(gpu.isOk(), gpu.status().toString().c_str());
            for (const std::string& note : (*gpu)->model().deviceNotes) qInfo("%s: %s", id.c_str(), note.c_str());
            for (Pooling p : {Pooling::Cls, Pooling::Mean}) {
                auto got = embedAndWait(**gpu, request(inputs, p));
                QVERIFY2(got.isOk(), got.status().toString().c_str());
                for (size_t i = 0; i < inputs.size(); ++i) {
                    const double d = maxAbsDiff(got->vectors[i], embedOne(*m_engine, inputs[i], p));
                    qInfo("%s, input %zu (%zu tokens), %s pooling: max |diff| %.2e against the CPU", id.c_str(), i,
                          inputs[i].size(), poolingName(p), d);
                    QVERIFY(d < 2e-3);
                }
            }
        }
    }

    // A figure, not a bound: 32 inputs of 128 tokens (4 per step of 512) through bert-tiny.
    void throughput() {
        std::vector<std::vector<int32_t>> inputs;
        for (int i = 0; i < 32; ++i) {
            std::vector<int32_t> ids(128);
            for (int p = 0; p < 128; ++p) ids[size_t(p)] = 1000 + (i * 131 + p * 17) % 20000;
            inputs.push_back(std::move(ids));
        }
        QElapsedTimer timer;
        timer.start();
        auto got = embedAndWait(*m_engine, request(inputs));
        QVERIFY2(got.isOk(), got.status().toString().c_str());
        const double ms = double(timer.nsecsElapsed()) / 1e6;
        qInfo("bert-tiny F32: 32 inputs x 128 tokens in %.1f ms (%.0f tokens/s)", ms, 4096.0 / ms * 1000.0);
    }

    void generationIsRefused() {
        GenerationRequest r;
        r.prompt = {101, 7592, 102};
        r.maxTokens = 4;
        struct Sink final : TokenSink {
            void onToken(const TokenInfo&) override {}
            void onFinish(FinishReason, const Usage&) override {}
            void onError(const Status&) override {}
        };
        r.sink = std::make_shared<Sink>();
        auto id = m_engine->submit(std::move(r));
        QCOMPARE(id.status().code(), ErrorCode::Unsupported);
        QCOMPARE(id.status().message(), std::string("this model computes embeddings only"));
    }

    void malformedFilesAreRefused_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("expected"); // in the error message
        QTest::newRow("missing norm bias") << QStringLiteral("drop blk.1.attn_output_norm.bias")
                                           << QStringLiteral("blk.1.attn_output_norm.bias");
        QTest::newRow("missing positions") << QStringLiteral("drop position_embd.weight") << QStringLiteral("position_embd.weight");
        QTest::newRow("short positions") << QStringLiteral("cut position_embd.weight") << QStringLiteral("position_embd.weight");
        QTest::newRow("narrow up") << QStringLiteral("cut blk.0.ffn_up.weight") << QStringLiteral("blk.0.ffn_up.weight");
        QTest::newRow("no epsilon") << QStringLiteral("key") << QStringLiteral("bert.attention.layer_norm_epsilon");
    }
    void malformedFilesAreRefused() {
        QFETCH(QString, what);
        QFETCH(QString, expected);
        const std::string bad = path("bad.gguf");
        const std::string verb = what.section(' ', 0, 0).toStdString(), target = what.section(' ', 1).toStdString();
        const Status st = rewriteGguf(
            m_model, bad, {},
            [&](const std::string& name, std::vector<uint64_t>& shape, std::vector<uint8_t>& bytes) {
                if (name != target) return true;
                if (verb == "drop") return false;
                shape.back() -= 1; // one row fewer
                bytes.resize(bytes.size() / (shape.back() + 1) * shape.back());
                return true;
            },
            verb == "key" ? "bert.attention.layer_norm_epsilon" : "");
        QVERIFY2(st.isOk(), st.toString().c_str());
        auto e = openEngine(bad);
        QVERIFY(!e.isOk());
        qInfo("%s: %s", qPrintable(what), e.status().toString().c_str());
        QVERIFY2(e.status().message().find(expected.toStdString()) != std::string::npos, e.status().toString().c_str());
    }
};

QTEST_GUILESS_MAIN(TestBert)
#include "test_bert.moc"
