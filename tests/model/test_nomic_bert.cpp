// The nomic-bert encoder through the engine's embeddings: a synthesized nomic-bert-tiny (the BGE
// WordPiece vocabulary; fused q/k/v, NeoX RoPE, SwiGLU, mean pooling) against llama.cpp
// (tests/tools/ref_embed.mjs) for short and long texts (F32; Q8_0 within a looser bound), batched
// inputs against one by one, separate q/k/v matrices as the fused one, and malformed or
// unsupported files refused by name. Negative controls: RoPE on the
// other pairing, another RoPE base, and a causal mask must each miss llama.cpp's vectors.
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "encoder_test_support.h"
#include "gguf_rewrite.h"
#include "reference_embeddings.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

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

constexpr int kEmbd = 256, kHeadDim = 64; // nomic-bert-tiny




// Tolerance against llama.cpp after normalization (F32 weights and K/V), as for bert.
constexpr double kMaxDiff = 2e-3, kMinCosine = 0.9999;

const char* const kSentence = "What is the capital of France? Paris, of course.";

// The q and k rows of a fused F32 attn_qkv [3E][E] reordered within each head so that RoPE on the
// NeoX pairing (i, i + D/2) rotates what the other pairing (2i, 2i + 1) would have rotated on the
// original: row i takes row 2i, row i + D/2 takes row 2i + 1. q · k is the same without RoPE, so
// only the pairing differs.
void interleaveQk(std::vector<uint8_t>& bytes) {
    const size_t row = size_t(kEmbd) * sizeof(float);
    const std::vector<uint8_t> old = bytes;
    for (int head = 0; head < 2 * kEmbd / kHeadDim; ++head) { // q's heads then k's
        const size_t base = size_t(head) * kHeadDim;
        for (int i = 0; i < kHeadDim / 2; ++i) {
            std::memcpy(&bytes[(base + i) * row], &old[(base + 2 * i) * row], row);
            std::memcpy(&bytes[(base + kHeadDim / 2 + i) * row], &old[(base + 2 * i + 1) * row], row);
        }
    }
}

} // namespace

class TestNomicBert : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model; // nomic-bert-tiny F32, mean pooling, attention.causal false
    std::unique_ptr<Engine> m_engine;


    std::string path(const std::string& name) const { return m_dir.filePath(QString::fromStdString(name)).toStdString(); }

    bool synth(const QString& type, const std::string& out) {
        const QString err = test::synthPreset(QStringLiteral("nomic-bert-tiny"), type, test::bgeVocabPath(), out);
        if (!err.isEmpty()) qWarning("synth: %s", qPrintable(err));
        return err.isEmpty();
    }

    // Ours (on `ours`, default: the same file) against llama.cpp's for `text` on `model`; agree
    // says whether they are within the bounds (figures logged), after checking the token ids.
    void compare(const std::string& model, const char* text, bool& agree, const std::string& ours = {},
                 double minCosine = kMinCosine, double maxDiff = kMaxDiff) {
        QString err;
        const Reference ref = referenceEmbedding(QString::fromStdString(model), QString::fromUtf8(text), {}, err);
        QVERIFY2(!ref.tokens.empty(), qPrintable(QStringLiteral("ref_embed.mjs failed: ") + err));
        auto engine = openEngine(ours.empty() ? model : ours);
        QVERIFY2(engine.isOk(), engine.status().toString().c_str());
        auto ids = (*engine)->tokenizer().encode(text, true, false);
        QVERIFY(ids.isOk());
        QCOMPARE(*ids, ref.tokens); // [CLS] ... [SEP], as llama.cpp evaluates
        const std::vector<float> mine = embedOne(**engine, ref.tokens);
        QCOMPARE(mine.size(), ref.vector.size());
        const std::vector<float> theirs = normalized(ref.vector);
        const double cos = cosine(mine, theirs), diff = maxAbsDiff(mine, theirs);
        qInfo("%zu tokens%s: cosine %.8f, max |diff| %.2e (normalized)", ref.tokens.size(),
              ours.empty() ? "" : " (ours on a changed copy)", cos, diff);
        agree = cos >= minCosine && diff <= maxDiff;
    }

private Q_SLOTS:
    void initTestCase() {
        if (qEnvironmentVariableIsEmpty("HEARTH_REF") || !QFile::exists(test::bgeVocabPath()))
            QSKIP("no BGE vocabulary: set HEARTH_REF to the reference folder (llama.cpp-src/models/ggml-vocab-bert-bge.gguf)");
        m_model = path("nomic-bert-tiny.gguf");
        QVERIFY(synth(QStringLiteral("F32"), m_model));
        auto e = openEngine(m_model);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        m_engine = std::move(*e);
        QCOMPARE(m_engine->model().architecture, std::string("nomic-bert"));
        QCOMPARE(m_engine->model().pooling, Pooling::Mean);
        QVERIFY(m_engine->model().embeddingsOnly);
    }

    void matchesLlamaCpp_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("short") << QStringLiteral("Hello world");
        QTest::newRow("sentence") << QString::fromUtf8(kSentence);
        QTest::newRow("long") << QString::fromUtf8(kLong);
    }
    void matchesLlamaCpp() {
        QFETCH(QString, text);
        bool agree = false;
        compare(m_model, text.toUtf8().constData(), agree);
        QVERIFY(agree);
    }

    // Q8_0 weights: llama.cpp and we round activations differently against quantized weights, so
    // the bound is the one bert's quantized files meet.
    void quantizedMatchesLlamaCpp() {
        const std::string model = path("nomic-bert-tiny-Q8_0.gguf");
        QVERIFY(synth(QStringLiteral("Q8_0"), model));
        for (const char* text : {kSentence, kLong}) {
            bool agree = false;
            compare(model, text, agree, {}, 0.9995, 1e-2);
            QVERIFY(agree);
        }
    }

    // Negative controls, each ours on a changed copy against llama.cpp on the original: RoPE on
    // the other pairing (the q/k rows reordered, see interleaveQk), RoPE at another base, and a
    // causal mask must each miss.
    void negativeControls_data() {
        QTest::addColumn<QString>("change");
        QTest::newRow("rope pairing") << QStringLiteral("pairing");
        QTest::newRow("rope base") << QStringLiteral("base");
        QTest::newRow("causal mask") << QStringLiteral("causal");
    }
    void negativeControls() {
        QFETCH(QString, change);
        const std::string changed = path("nomic-" + change.toStdString() + ".gguf");
        const Status st = rewriteGguf(
            m_model, changed,
            [&](gguf::Writer& w) {
                if (change == QLatin1String("base")) w.set("nomic-bert.rope.freq_base", gguf::Value::f32(10000.0f));
                if (change == QLatin1String("causal")) w.set("nomic-bert.attention.causal", gguf::Value::boolean(true));
            },
            [&](const std::string& name, std::vector<uint64_t>&, std::vector<uint8_t>& bytes) {
                if (change == QLatin1String("pairing") && name.ends_with("attn_qkv.weight")) interleaveQk(bytes);
                return true;
            });
        QVERIFY2(st.isOk(), st.toString().c_str());
        bool agree = true;
        compare(m_model, kSentence, agree, changed);
        QVERIFY(!agree);
    }

    // Several inputs of different lengths in one step give what each gives alone.
    void batchedInputsMatchOneByOne() {
        const QString bad = test::batchedMismatch(*m_engine, {"Hello world", kSentence, kLong, "a"},
                                                  {Pooling::Mean, Pooling::Cls});
        QVERIFY2(bad.isEmpty(), qPrintable(bad));
    }

    // The same weights as three attn_q/k/v matrices (as llama.cpp also accepts) give the same
    // vectors as the fused attn_qkv.
    void separateQkvMatchesFused() {
        auto src = gguf::File::open(m_model);
        QVERIFY(src.isOk());
        const std::string split = path("nomic-split.gguf");
        Status added = Status::ok();
        const Status st = rewriteGguf(
            m_model, split,
            [&](gguf::Writer& w) {
                for (int l = 0; l < 3; ++l) {
                    const std::string p = "blk." + std::to_string(l) + ".";
                    const gguf::TensorInfo* t = src->findTensor(p + "attn_qkv.weight");
                    if (!t) {
                        added = Status(ErrorCode::NotFound, p + "attn_qkv.weight");
                        return;
                    }
                    const uint8_t* data = src->tensorData(*t);
                    const size_t part = t->bytes / 3; // E rows of E F32 values each
                    for (int i = 0; i < 3; ++i) {
                        const char* name[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight"};
                        const Status s = w.addTensor(p + name[i], t->type, {uint64_t(kEmbd), uint64_t(kEmbd)},
                                                     std::vector<uint8_t>(data + i * part, data + (i + 1) * part));
                        if (!s.isOk()) added = s;
                    }
                }
            },
            [](const std::string& name, std::vector<uint64_t>&, std::vector<uint8_t>&) {
                return !name.ends_with("attn_qkv.weight");
            });
        QVERIFY2(st.isOk() && added.isOk(), (st.toString() + " " + added.toString()).c_str());
        auto e = openEngine(split);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        for (const char* t : {kSentence, kLong}) {
            auto ids = m_engine->tokenizer().encode(t, true, false);
            QVERIFY(ids.isOk());
            const double d = maxAbsDiff(embedOne(**e, *ids), embedOne(*m_engine, *ids));
            qInfo("%zu tokens: separate q/k/v against fused, max |diff| %.2e", ids->size(), d);
            QVERIFY(d < 1e-6);
        }
    }

    // Tensors this file does not bind are refused by name rather than ignored: a fused q/k/v
    // bias (llama.cpp would add it; nomic-embed-text files have none) and position embeddings
    // (which nomic-bert never adds).
    void unsupportedTensorsAreRefused_data() {
        QTest::addColumn<QString>("tensor");
        QTest::addColumn<int>("rows");
        QTest::newRow("fused q/k/v bias") << QStringLiteral("blk.1.attn_qkv.bias") << 0;
        QTest::newRow("position embeddings") << QStringLiteral("position_embd.weight") << 2048;
    }
    void unsupportedTensorsAreRefused() {
        QFETCH(QString, tensor);
        QFETCH(int, rows);
        const std::string bad = path("extra.gguf"), name = tensor.toStdString();
        Status added = Status::ok();
        const Status st = rewriteGguf(m_model, bad, [&](gguf::Writer& w) {
            std::vector<uint64_t> shape{uint64_t(rows > 0 ? kEmbd : 3 * kEmbd)};
            if (rows > 0) shape.push_back(uint64_t(rows));
            const size_t n = rows > 0 ? size_t(kEmbd) * size_t(rows) : size_t(3 * kEmbd);
            added = w.addTensor(name, quant::Type::F32, shape, std::vector<uint8_t>(n * sizeof(float), 0));
        });
        QVERIFY2(st.isOk() && added.isOk(), (st.toString() + " " + added.toString()).c_str());
        auto e = openEngine(bad);
        QVERIFY(!e.isOk());
        qInfo("%s: %s", qPrintable(tensor), e.status().toString().c_str());
        QCOMPARE(e.status().code(), ErrorCode::Unsupported);
        QVERIFY2(e.status().message().find(name) != std::string::npos, e.status().toString().c_str());
    }

    void malformedFilesAreRefused_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("expected"); // in the error message
        QTest::newRow("missing gate") << QStringLiteral("drop blk.1.ffn_gate.weight") << QStringLiteral("blk.1.ffn_gate.weight");
        QTest::newRow("missing norm bias") << QStringLiteral("drop blk.2.layer_output_norm.bias")
                                           << QStringLiteral("blk.2.layer_output_norm.bias");
        QTest::newRow("missing embedding norm") << QStringLiteral("drop token_embd_norm.weight")
                                                << QStringLiteral("token_embd_norm.weight");
        QTest::newRow("short qkv") << QStringLiteral("cut blk.0.attn_qkv.weight") << QStringLiteral("blk.0.attn_qkv.weight");
        QTest::newRow("narrow up") << QStringLiteral("cut blk.1.ffn_up.weight") << QStringLiteral("blk.1.ffn_up.weight");
        QTest::newRow("no epsilon") << QStringLiteral("key nomic-bert.attention.layer_norm_epsilon")
                                    << QStringLiteral("nomic-bert.attention.layer_norm_epsilon");
        QTest::newRow("no type count") << QStringLiteral("key tokenizer.ggml.token_type_count")
                                       << QStringLiteral("tokenizer.ggml.token_type_count");
    }
    void malformedFilesAreRefused() {
        QFETCH(QString, what);
        QFETCH(QString, expected);
        const std::string bad = path("bad.gguf");
        const std::string verb = what.section(' ', 0, 0).toStdString(), target = what.section(' ', 1).toStdString();
        const Status st = rewriteGguf(
            m_model, bad, {},
            [&](const std::string& name, std::vector<uint64_t>& shape, std::vector<uint8_t>& bytes) {
                if (verb == "key" || name != target) return true;
                if (verb == "drop") return false;
                shape.back() -= 1; // one row fewer
                bytes.resize(bytes.size() / (shape.back() + 1) * shape.back());
                return true;
            },
            verb == "key" ? target : "");
        QVERIFY2(st.isOk(), st.toString().c_str());
        auto e = openEngine(bad);
        QVERIFY(!e.isOk());
        qInfo("%s: %s", qPrintable(what), e.status().toString().c_str());
        QVERIFY2(e.status().message().find(expected.toStdString()) != std::string::npos, e.status().toString().c_str());
    }
};

QTEST_GUILESS_MAIN(TestNomicBert)
#include "test_nomic_bert.moc"
