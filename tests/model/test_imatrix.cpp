// Perplexity and importance matrices on the real tiny model (stories260K): our perplexity against
// the one computed from llama.cpp's logits of the same chunks; the imatrix collector (which
// matrices, counts, shared inputs agreeing), the GGUF file round trip, a reader test on a file
// written by hand in llama.cpp's legacy format, bad files; and quantize --imatrix end to end.
#include "hearth/evaluate.h"
#include "hearth/gguf.h"
#include "hearth/imatrix.h"
#include "hearth/quant.h"
#include "test_support.h"

#include <QHash>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

using namespace hearth;

namespace {

std::string readText(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<float> readFloats(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    std::vector<char> b{std::istreambuf_iterator<char>(in), {}};
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), f.size() * 4);
    return f;
}

struct Cli {
    int code = -1;
    QString out, err;
};
Cli cli(const QStringList& args) {
    QProcess p;
    p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"), args);
    Cli r;
    if (!p.waitForFinished(300000)) return r;
    r.code = p.exitCode();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

void writeI32(std::ofstream& o, int32_t v) { o.write(reinterpret_cast<const char*>(&v), 4); }

// A quantization mix and llama.cpp's LLAMA_FTYPE_MOSTLY_* for it.
struct Mix {
    const char* name;
    int ftype;
};
const Mix kLowBitMixes[] = {{"IQ2_XXS", 19}, {"IQ2_XS", 20}, {"IQ2_S", 28}, {"IQ2_M", 29}, {"IQ3_XXS", 23}, {"IQ3_XS", 22},
                            {"IQ3_S", 26},   {"IQ3_M", 27},  {"IQ1_S", 24}, {"IQ1_M", 31}, {"TQ1_0", 36},   {"TQ2_0", 37}};
const Mix kEightExpertMixes[] = {{"Q2_K", 10},    {"Q3_K_M", 12},  {"Q3_K_L", 13}, {"Q4_K_M", 15}, {"IQ4_XS", 30},
                                 {"IQ2_XXS", 19}, {"IQ3_XXS", 23}, {"IQ3_M", 27},  {"Q8_0", 7}};

} // namespace

class TestImatrix : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model;
    QString m_calibration, m_heldout;

    QString m_backend, m_skipReason;
    QHash<QString, QString> m_theirs; // "f32 path, mix" -> llama_model_quantize's file

    // Builds tests/model/NAME.cpp against the reference engine's libllama; empty (with
    // m_skipReason) when the reference is not set up here.
    QString referenceHarness(const QString& name) {
        QByteArray refEnv = qgetenv("HEARTH_REF");
        const QString ref = refEnv.isEmpty() ? QDir::homePath() + QStringLiteral("/.cache/hearth-ref") : QString::fromLocal8Bit(refEnv);
        m_backend = ref + QStringLiteral("/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
        if (!QFileInfo::exists(m_backend + QStringLiteral("/libllama.v0.5.0.so")) ||
            !QFileInfo::exists(ref + QStringLiteral("/llama.cpp-src/include/llama.h"))) {
            m_skipReason = QStringLiteral("the reference engine is not set up (run ../shared/tools/reference/setup.sh)");
            return {};
        }
        const QString harness = m_dir.filePath(name);
        if (QFileInfo::exists(harness)) return harness;
        QProcess cc;
        cc.start(QStringLiteral("g++"),
                 {QStringLiteral("-O1"), QStringLiteral("-std=c++17"), QStringLiteral("-I") + ref + QStringLiteral("/llama.cpp-src/include"),
                  QStringLiteral("-I") + ref + QStringLiteral("/llama.cpp-src/ggml/include"),
                  hearth::test::sourceDir() + QStringLiteral("/tests/model/") + name + QStringLiteral(".cpp"), QStringLiteral("-o"),
                  harness, m_backend + QStringLiteral("/libllama.v0.5.0.so"), m_backend + QStringLiteral("/libggml.v0.5.0.so"),
                  m_backend + QStringLiteral("/libggml-base.so"), QStringLiteral("-Wl,-rpath,") + m_backend});
        if (!cc.waitForStarted(10000) || !cc.waitForFinished(300000) || cc.exitCode() != 0) {
            m_skipReason = QStringLiteral("the reference harness %1 did not build: %2").arg(name, QString::fromUtf8(cc.readAllStandardError().right(300)));
            return {};
        }
        return harness;
    }

    // llama_model_quantize's file of `f32` in `mix` with the importance in `impText`: the first
    // call writes every mix of `mixes` in one harness run (ggml's low-bit tables are built once),
    // later ones find theirs. Empty on failure (llama.cpp's message goes to a warning).
    QString referenceMix(const QString& harness, const QString& f32, const QString& impText, const Mix* mixes,
                         size_t count, const QString& mix) {
        const QString key = f32 + QLatin1Char(' ') + mix;
        if (!m_theirs.contains(key)) {
            QStringList outs, ftypes;
            for (size_t i = 0; i < count; ++i) {
                outs << f32 + QStringLiteral(".theirs-") + QLatin1String(mixes[i].name) + QStringLiteral(".gguf");
                ftypes << QString::number(mixes[i].ftype);
            }
            QProcess p;
            p.start(harness, {m_backend, f32, outs.join(QLatin1Char(',')), ftypes.join(QLatin1Char(',')), impText});
            if (!p.waitForFinished(600000) || p.exitCode() != 0) {
                qWarning("ref_quantize: %s", p.readAllStandardError().constData());
                return {};
            }
            for (size_t i = 0; i < count; ++i) m_theirs.insert(f32 + QLatin1Char(' ') + QLatin1String(mixes[i].name), outs[int(i)]);
        }
        return m_theirs.value(key);
    }

    // The per-column importance of every imatrix entry as text lines "NAME v0 v1 ..." for the
    // ref_quantize harness.
    static bool writeImportanceText(const imatrix::Data& data, const QString& path) {
        std::ofstream o(path.toStdString());
        for (const auto& [name, e] : data.entries) {
            auto imp = imatrix::importanceFor(data, name, e.cols(), int64_t(e.counts.size()));
            if (!imp.isOk() || !imp->has_value()) return false;
            o << name;
            char buf[32];
            for (float v : **imp) {
                std::snprintf(buf, sizeof buf, " %.9g", double(v));
                o << buf;
            }
            o << '\n';
        }
        return bool(o);
    }

    std::unique_ptr<Evaluator> open(int ctx) {
        EvaluatorConfig c;
        c.modelPath = m_model;
        c.contextLength = ctx;
        c.threads = 2;
        auto e = Evaluator::open(c);
        if (!e) qWarning() << e.status().toString().c_str();
        return e ? std::move(*e) : nullptr;
    }
    std::vector<int32_t> tokens(Evaluator& e, const QString& path) {
        return e.tokenizer().encode(readText(path), true, false).value();
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        m_model = hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        m_calibration = hearth::test::sourceDir() + QStringLiteral("/tests/data/tinystories_calibration.txt");
        m_heldout = hearth::test::sourceDir() + QStringLiteral("/tests/data/tinystories_heldout.txt");
        QVERIFY(QFileInfo::exists(m_calibration) && QFileInfo::exists(m_heldout));
        QVERIFY(m_dir.isValid());
    }

    // The same chunks scored from llama.cpp's logits (tests/model/ref_logits.cpp over libllama)
    // give the same perplexity to 1e-3 relative; scoring them one token off (a negative control)
    // does not.
    void perplexityMatchesLlamaCpp() {
        const QString harness = referenceHarness(QStringLiteral("ref_logits"));
        if (harness.isEmpty()) QSKIP(qPrintable(m_skipReason));
        const QString backend = m_backend;
        constexpr int kCtx = 128, kChunks = 6;
        auto eval = open(kCtx);
        QVERIFY(eval);
        const std::vector<int32_t> ids = tokens(*eval, m_heldout);
        QVERIFY(ids.size() >= size_t(kCtx * kChunks));
        QCOMPARE(ids[0], eval->bosToken());
        auto ours = perplexity(*eval, ids, kCtx, kChunks);
        QVERIFY2(ours.isOk(), ours.status().toString().c_str());
        QCOMPARE(ours->chunks, kChunks);
        QCOMPARE(ours->scored, int64_t(kChunks * (kCtx - kCtx / 2 - 1)));

        double nll = 0, nll2 = 0, offNll = 0, offNll2 = 0;
        const int first = kCtx / 2, vocab = eval->nVocab();
        for (int c = 0; c < kChunks; ++c) {
            QStringList list{QString::number(eval->bosToken())};
            for (int i = 1; i < kCtx; ++i) list << QString::number(ids[size_t(c * kCtx + i)]);
            const QString out = m_dir.filePath(QStringLiteral("chunk.f32"));
            QProcess p;
            p.start(harness, {QString::fromStdString(m_model), backend, out, list.join(',')});
            QVERIFY(p.waitForFinished(120000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            const std::vector<float> logits = readFloats(out);
            QCOMPARE(logits.size(), size_t(kCtx) * size_t(vocab));
            const std::span<const float> scored(logits.data() + size_t(first) * vocab, size_t(kCtx - first) * vocab);
            accumulateNll(scored, vocab, std::span<const int32_t>(ids.data() + c * kCtx + first + 1, size_t(kCtx - first - 1)), nll, nll2);
            accumulateNll(scored, vocab, std::span<const int32_t>(ids.data() + c * kCtx + first + 2, size_t(kCtx - first - 1)), offNll,
                          offNll2);
        }
        const double theirs = std::exp(nll / double(ours->scored)), off = std::exp(offNll / double(ours->scored));
        qInfo("stories260K, %d chunks of %d: ours PPL %.4f +/- %.4f, from llama.cpp's logits %.4f (one token off: %.2f)",
              kChunks, kCtx, ours->ppl, ours->pplError, theirs, off);
        QVERIFY2(std::fabs(ours->ppl - theirs) <= 1e-3 * theirs, qPrintable(QString::number(ours->ppl - theirs)));
        QVERIFY2(std::fabs(off - theirs) > 0.5 * theirs, "negative control: misaligned scoring should not agree");
    }

    // Every layer matmul is observed (q/k/v share their input, as do gate/up), each counting every
    // token of every chunk; without an observer nothing more is counted.
    void collectorSeesEveryMatmul() {
        constexpr int kCtx = 128, kChunks = 3;
        auto eval = open(kCtx);
        QVERIFY(eval);
        imatrix::Collector collector;
        QVERIFY(eval->setObserver(&collector).isOk());
        const std::vector<int32_t> ids = tokens(*eval, m_calibration);
        QVERIFY(perplexity(*eval, ids, kCtx, kChunks).isOk());
        QVERIFY(collector.status().isOk());
        std::set<std::string> expected;
        for (const std::string& n : eval->weightNames())
            for (const char* part : {"attn_q.", "attn_k.", "attn_v.", "attn_output.", "ffn_gate.", "ffn_up.", "ffn_down."})
                if (n.rfind("blk.", 0) == 0 && n.find(part) != std::string::npos) expected.insert(n);
        QCOMPARE(expected.size(), size_t(35)); // 5 layers × 7 matrices
        std::set<std::string> got;
        for (const auto& [name, e] : collector.entries()) {
            got.insert(name);
            QCOMPARE(e.counts, std::vector<int64_t>{kCtx * kChunks});
            for (float v : e.sums) QVERIFY(std::isfinite(v) && v >= 0.0f);
        }
        QCOMPARE(got, expected);
        const auto& en = collector.entries();
        QCOMPARE(en.at("blk.2.attn_q.weight").sums, en.at("blk.2.attn_k.weight").sums);
        QCOMPARE(en.at("blk.2.attn_q.weight").sums, en.at("blk.2.attn_v.weight").sums);
        QCOMPARE(en.at("blk.2.ffn_gate.weight").sums, en.at("blk.2.ffn_up.weight").sums);
        QCOMPARE(en.at("blk.0.ffn_down.weight").cols(), int64_t(172));
        QVERIFY(en.at("blk.0.attn_q.weight").sums != en.at("blk.1.attn_q.weight").sums);

        QVERIFY(eval->setObserver(nullptr).isOk());
        QVERIFY(perplexity(*eval, ids, kCtx, 1).isOk());
        QCOMPARE(collector.entries().at("blk.0.attn_q.weight").counts[0], int64_t(kCtx * kChunks));
    }

    // The sums match those llama.cpp's own graph gives through its eval callback, the way its
    // imatrix tool collects them (tests/model/ref_imatrix.cpp), on the same chunks.
    void collectorMatchesLlamaCpp() {
        const QString harness = referenceHarness(QStringLiteral("ref_imatrix"));
        if (harness.isEmpty()) QSKIP(qPrintable(m_skipReason));
        constexpr int kCtx = 128, kChunks = 3;
        auto eval = open(kCtx);
        QVERIFY(eval);
        imatrix::Collector collector;
        QVERIFY(eval->setObserver(&collector).isOk());
        const std::vector<int32_t> ids = tokens(*eval, m_calibration);
        QVERIFY(perplexity(*eval, ids, kCtx, kChunks, {}, /*allRows=*/true).isOk());
        QStringList list;
        for (int c = 0; c < kChunks; ++c)
            for (int i = 0; i < kCtx; ++i) list << QString::number(i == 0 ? eval->bosToken() : ids[size_t(c * kCtx + i)]);
        const QString out = m_dir.filePath(QStringLiteral("ref_imatrix.txt"));
        QProcess p;
        p.start(harness, {QString::fromStdString(m_model), m_backend, out, QString::number(kCtx), list.join(',')});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        std::ifstream in(out.toStdString());
        size_t lines = 0;
        double worst = 0.0;
        for (std::string line; std::getline(in, line); ++lines) {
            std::istringstream fields(line);
            std::string name;
            int64_t count = 0;
            fields >> name >> count;
            std::vector<double> theirs{std::istream_iterator<double>(fields), {}};
            const auto it = collector.entries().find(name);
            QVERIFY2(it != collector.entries().end(), name.c_str());
            QCOMPARE(it->second.counts[0], count);
            QCOMPARE(it->second.sums.size(), theirs.size());
            double scale = 0.0;
            for (double v : theirs) scale = std::max(scale, v);
            for (size_t j = 0; j < theirs.size(); ++j) worst = std::max(worst, std::fabs(it->second.sums[j] - theirs[j]) / scale);
        }
        QCOMPARE(lines, collector.entries().size());
        qInfo("imatrix sums vs llama.cpp's: %zu matrices, largest difference %.2e of each matrix's largest sum", lines, worst);
        QVERIFY2(worst < 1e-3, qPrintable(QString::number(worst)));
    }

    // Whole files: llama_model_quantize given the same importance (through the reference's
    // API, tests/model/ref_quantize.cpp) writes the same bytes for every tensor the imatrix
    // covers, type by type; the tensors it does not cover are reported.
    void quantizeMatchesLlamaCpp_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("ftype"); // llama_ftype
        QTest::newRow("Q4_0") << QStringLiteral("Q4_0") << 2;
        QTest::newRow("Q4_1") << QStringLiteral("Q4_1") << 3;
        QTest::newRow("Q5_0") << QStringLiteral("Q5_0") << 8;
        QTest::newRow("Q5_1") << QStringLiteral("Q5_1") << 9;
        QTest::newRow("IQ4_NL") << QStringLiteral("IQ4_NL") << 25;
        // The low-bit mixes: stories260K's 64-wide rows fall back to 32-block types, so these check
        // llama.cpp's per-tensor rules and fallbacks (every tensor's type) on real weights.
        QTest::newRow("IQ2_XXS") << QStringLiteral("IQ2_XXS") << 19;
        QTest::newRow("IQ2_M") << QStringLiteral("IQ2_M") << 29;
        QTest::newRow("IQ3_XXS") << QStringLiteral("IQ3_XXS") << 23;
        QTest::newRow("IQ3_M") << QStringLiteral("IQ3_M") << 27;
        QTest::newRow("IQ1_M") << QStringLiteral("IQ1_M") << 31;
        QTest::newRow("TQ1_0") << QStringLiteral("TQ1_0") << 36;
    }
    void quantizeMatchesLlamaCpp() {
        QFETCH(QString, type);
        QFETCH(int, ftype);
        const QString harness = referenceHarness(QStringLiteral("ref_quantize"));
        if (harness.isEmpty()) QSKIP(qPrintable(m_skipReason));
        const QString model = QString::fromStdString(m_model);
        const QString im = m_dir.filePath(QStringLiteral("cmp.imatrix"));
        if (!QFileInfo::exists(im)) {
            const Cli r = cli({QStringLiteral("imatrix"), model, QStringLiteral("--text"), m_calibration, QStringLiteral("--ctx"),
                               QStringLiteral("128"), QStringLiteral("-o"), im});
            QVERIFY2(r.code == 0, qPrintable(r.err));
        }
        auto data = imatrix::read(im.toStdString());
        QVERIFY(data.isOk());
        const QString impText = m_dir.filePath(QStringLiteral("importance.txt"));
        QVERIFY(writeImportanceText(*data, impText));
        const QString ours = m_dir.filePath(QStringLiteral("ours-%1.gguf").arg(type)), theirs = m_dir.filePath(QStringLiteral("theirs-%1.gguf").arg(type));
        const Cli r = cli({QStringLiteral("quantize"), model, ours, type, QStringLiteral("--imatrix"), im});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QProcess p;
        p.start(harness, {m_backend, model, theirs, QString::number(ftype), impText});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        auto a = gguf::File::open(ours.toStdString()), b = gguf::File::open(theirs.toStdString());
        QVERIFY(a.isOk() && b.isOk());
        QCOMPARE(a->tensors().size(), b->tensors().size());
        int covered = 0, same = 0;
        QStringList others;
        for (const gguf::TensorInfo& t : a->tensors()) {
            const gguf::TensorInfo* u = nullptr;
            for (const gguf::TensorInfo& x : b->tensors())
                if (x.name == t.name) u = &x;
            QVERIFY2(u, t.name.c_str());
            const bool identical = t.type == u->type && t.bytes == u->bytes && std::memcmp(a->tensorData(t), b->tensorData(*u), t.bytes) == 0;
            same += identical;
            QVERIFY2(t.type == u->type, (t.name + ": " + std::string(quant::typeName(t.type)) + " vs llama.cpp's " +
                                         std::string(quant::typeName(u->type))).c_str()); // the mix rules
            if (data->entries.count(t.name) && quant::takesImportance(t.type)) {
                ++covered;
                QVERIFY2(identical, t.name.c_str());
            } else if (!identical) {
                others << QString::fromStdString(t.name + " (" + std::string(quant::typeName(t.type)) + " vs " +
                                                 std::string(quant::typeName(u->type)) + ")");
            }
        }
        qInfo("%s: %d of %zu tensors byte-identical to llama_model_quantize's; all %d imatrix-weighted ones; differing: %s",
              qPrintable(type), same, a->tensors().size(), covered, others.isEmpty() ? "none" : qPrintable(others.join(", ")));
        QCOMPARE(covered, 30);
    }

    // The low-bit mixes on a model whose rows 256-blocks tile (a synthesized llama-tiny layer):
    // without an imatrix llama.cpp refuses the tensors whose type needs one, and so do we; with
    // one, every IQ2_XXS / IQ2_XS / IQ1_S tensor holds quantizeRowWeighted's bytes (ggml's,
    // test_ggml_oracle) for the file's importance, and a flat importance (negative control) gives
    // other bytes.
    // (The synthesized models here take stories260K's 512-token vocabulary: a 32000-row embedding
    // and output would spend most of each quantization, ours and llama.cpp's, on two tables.)
    void lowBitMixesWithImatrix_data() {
        QTest::addColumn<QString>("mix");
        for (const Mix& m : kLowBitMixes) QTest::newRow(m.name) << QString::fromLatin1(m.name);
    }
    void lowBitMixesWithImatrix() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString f32 = m_dir.filePath(QStringLiteral("lt.gguf")), im = m_dir.filePath(QStringLiteral("lt.imatrix"));
        Cli r;
        if (!QFileInfo::exists(im)) { // the model and its imatrix, made by the first row
            r = cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("llama-tiny"), QStringLiteral("--type"),
                     QStringLiteral("F32"), QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("--vocab"),
                     QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"))),
                     QStringLiteral("-o"), f32});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            r = cli({QStringLiteral("imatrix"), f32, QStringLiteral("--text"), m_calibration, QStringLiteral("--ctx"), QStringLiteral("64"),
                     QStringLiteral("--chunks"), QStringLiteral("2"), QStringLiteral("-o"), im});
            QVERIFY2(r.code == 0, qPrintable(r.err));
        }
        auto data = imatrix::read(im.toStdString());
        QVERIFY(data.isOk());
        auto src = gguf::File::open(f32.toStdString());
        QVERIFY(src.isOk());
        const QString out = m_dir.filePath(QStringLiteral("lt-q.gguf"));
        r = cli({QStringLiteral("quantize"), f32, out, QStringLiteral("IQ1_S")});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("requires an importance matrix")), qPrintable(r.err));
        r = cli({QStringLiteral("quantize"), f32, out, QStringLiteral("TQ1_0")}); // ternary: no imatrix needed
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString harness = referenceHarness(QStringLiteral("ref_quantize"));
        const QString impText = m_dir.filePath(QStringLiteral("lt-importance.txt"));
        QVERIFY(writeImportanceText(*data, impText));
        QFETCH(QString, mix);
        const QByteArray mixBytes = mix.toLatin1();
        const char* mixName = mixBytes.constData();
        r = cli({QStringLiteral("quantize"), f32, out, mix, QStringLiteral("--imatrix"), im});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        // The whole file against llama_model_quantize's with the same importance (without the
        // reference, the row checks our own bytes below and then reports the comparison skipped).
        if (!harness.isEmpty()) {
            const QString theirs =
                referenceMix(harness, f32, impText, kLowBitMixes, std::size(kLowBitMixes), mix);
            QVERIFY2(!theirs.isEmpty(), "llama_model_quantize failed");
            auto a = gguf::File::open(out.toStdString()), b = gguf::File::open(theirs.toStdString());
            QVERIFY(a.isOk() && b.isOk());
            QCOMPARE(a->tensors().size(), b->tensors().size());
            QStringList kinds, others;
            int strict = 0;
            for (const gguf::TensorInfo& t : a->tensors()) {
                const gguf::TensorInfo* found = nullptr;
                for (const gguf::TensorInfo& x : b->tensors())
                    if (x.name == t.name) found = &x;
                QVERIFY2(found, t.name.c_str());
                const gguf::TensorInfo& u = *found;
                QVERIFY2(t.type == u.type, (t.name + ": " + std::string(quant::typeName(t.type)) + " vs llama.cpp's " +
                                            std::string(quant::typeName(u.type))).c_str());
                const bool identical = t.bytes == u.bytes && std::memcmp(a->tensorData(t), b->tensorData(u), t.bytes) == 0;
                // Weighted tensors, and every tensor of the low-bit types, must be identical; our
                // plain (imatrix-free) K-quant searches are not ggml's bit for bit (test_ggml_oracle
                // holds them to its error instead), so those are only listed.
                const bool lowBit = quant::requiresImportance(t.type) || t.type == quant::Type::IQ3_S ||
                                    t.type == quant::Type::TQ1_0 || t.type == quant::Type::TQ2_0;
                if (lowBit || (data->entries.count(t.name) && quant::takesImportance(t.type))) {
                    QVERIFY2(identical, (std::string(mixName) + " " + t.name).c_str());
                    ++strict;
                } else if (!identical) {
                    others << QString::fromStdString(t.name + " (" + std::string(quant::typeName(t.type)) + ")");
                }
                const QString k = QString::fromLatin1(quant::typeName(t.type).data());
                if (!kinds.contains(k)) kinds << k;
            }
            qInfo("%s: types %s as llama.cpp's; %d weighted/low-bit tensors byte-identical to llama_model_quantize's; "
                  "other differing: %s",
                  mixName, qPrintable(kinds.join(QLatin1Char(' '))), strict,
                  others.isEmpty() ? "none" : qPrintable(others.join(QStringLiteral(", "))));
        }
        if (std::string_view(mixName) != "IQ2_XXS" && std::string_view(mixName) != "IQ2_S" &&
            std::string_view(mixName) != "IQ1_S") {
            if (harness.isEmpty()) QSKIP(qPrintable(m_skipReason));
            return;
        }
        auto q = gguf::File::open(out.toStdString());
        QVERIFY(q.isOk());
        int checked = 0;
        bool flatDiffers = false;
        for (const gguf::TensorInfo& t : q->tensors()) {
            if (!quant::requiresImportance(t.type)) continue;
            const gguf::TensorInfo* s = nullptr;
            for (const gguf::TensorInfo& x : src->tensors())
                if (x.name == t.name) s = &x;
            QVERIFY(s && s->type == quant::Type::F32);
            auto imp = imatrix::importanceFor(*data, t.name, int64_t(t.ne[0]), 1);
            QVERIFY(imp.isOk() && imp->has_value());
            const uint64_t rb = *quant::rowBytes(t.type, t.ne[0]);
            std::vector<uint8_t> expect(rb), flatBytes(rb);
            const std::vector<float> flat(size_t(t.ne[0]), 1.0f);
            const auto* f = reinterpret_cast<const float*>(src->tensorData(*s));
            for (uint64_t row = 0; row < t.ne[1]; ++row) {
                const float* x = f + row * t.ne[0];
                QVERIFY(quant::quantizeRowWeighted(t.type, x, expect.data(), int64_t(t.ne[0]), (*imp)->data()).isOk());
                QVERIFY2(std::memcmp(expect.data(), q->tensorData(t) + row * rb, rb) == 0, t.name.c_str());
                if (flatDiffers) continue; // the negative control needs one row that differs
                QVERIFY(quant::quantizeRowWeighted(t.type, x, flatBytes.data(), int64_t(t.ne[0]), flat.data()).isOk());
                flatDiffers = flatBytes != expect;
            }
            ++checked;
        }
        qInfo("%s: %d tensors of imatrix-only types hold quantizeRowWeighted's bytes", mixName, checked);
        QVERIFY(checked >= 4);
        QVERIFY2(flatDiffers, "negative control: a flat importance gave the same bytes");
        if (harness.isEmpty()) QSKIP(qPrintable(m_skipReason));
    }

    // llama.cpp's rules for 8-expert models (attn_v / attn_k to Q8_0 or Q4_K, attn_output to Q5_K,
    // IQ3_M's ffn_down): on a synthesized mixtral-tiny (4 layers, 8 experts) every tensor's type
    // equals llama_model_quantize's, mix by mix.
    void eightExpertMixesMatchLlamaCpp_data() {
        QTest::addColumn<QString>("mix");
        for (const Mix& m : kEightExpertMixes) QTest::newRow(m.name) << QString::fromLatin1(m.name);
    }
    void eightExpertMixesMatchLlamaCpp() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString harness = referenceHarness(QStringLiteral("ref_quantize"));
        if (harness.isEmpty()) QSKIP(qPrintable(m_skipReason));
        const QString f32 = m_dir.filePath(QStringLiteral("mx.gguf")), im = m_dir.filePath(QStringLiteral("mx.imatrix"));
        Cli r;
        if (!QFileInfo::exists(im)) { // the model and its imatrix, made by the first row
            r = cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("mixtral-tiny"), QStringLiteral("--type"),
                     QStringLiteral("F32"), QStringLiteral("--vocab"),
                     QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"))),
                     QStringLiteral("-o"), f32});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            r = cli({QStringLiteral("imatrix"), f32, QStringLiteral("--text"), m_calibration, QStringLiteral("--ctx"), QStringLiteral("64"),
                     QStringLiteral("--chunks"), QStringLiteral("1"), QStringLiteral("-o"), im});
            QVERIFY2(r.code == 0, qPrintable(r.err));
        }
        auto data = imatrix::read(im.toStdString());
        QVERIFY(data.isOk());
        const QString impText = m_dir.filePath(QStringLiteral("mx-importance.txt"));
        QVERIFY(writeImportanceText(*data, impText));
        QFETCH(QString, mix);
        const QByteArray mixName = mix.toLatin1();
        const QString ours = m_dir.filePath(QStringLiteral("mx-ours.gguf"));
        r = cli({QStringLiteral("quantize"), f32, ours, mix, QStringLiteral("--imatrix"), im});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString theirs = referenceMix(harness, f32, impText, kEightExpertMixes, std::size(kEightExpertMixes), mix);
        QVERIFY2(!theirs.isEmpty(), "llama_model_quantize failed");
        auto a = gguf::File::open(ours.toStdString()), b = gguf::File::open(theirs.toStdString());
        QVERIFY(a.isOk() && b.isOk());
        QCOMPARE(a->tensors().size(), b->tensors().size());
        QStringList differing, kinds;
        for (const gguf::TensorInfo& t : a->tensors()) {
            const gguf::TensorInfo* u = nullptr;
            for (const gguf::TensorInfo& x : b->tensors())
                if (x.name == t.name) u = &x;
            QVERIFY2(u, t.name.c_str());
            if (t.type != u->type)
                differing << QString::fromStdString(t.name + " (" + std::string(quant::typeName(t.type)) + " vs " +
                                                    std::string(quant::typeName(u->type)) + ")");
            const QString k = QString::fromLatin1(quant::typeName(t.type).data());
            if (!kinds.contains(k)) kinds << k;
        }
        qInfo("mixtral-tiny %s: types %s; differing from llama.cpp's: %s", mixName.constData(), qPrintable(kinds.join(QLatin1Char(' '))),
              differing.isEmpty() ? "none" : qPrintable(differing.join(QStringLiteral(", "))));
        QVERIFY2(differing.isEmpty(), mixName.constData());
    }

    // Mixture of experts (a synthesized qwen3moe-tiny layer): per-expert sums and counts (all the
    // (token, slot) pairs), and quantize --imatrix giving each expert's rows its own importance.
    void expertsAreCountedPerExpert() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-qwen2.gguf"));
        const QString moe = m_dir.filePath(QStringLiteral("moe.gguf"));
        Cli r = cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("qwen3moe-tiny"), QStringLiteral("--type"),
                     QStringLiteral("F32"), QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("--vocab"),
                     QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/ggml-vocab-qwen2.gguf"))),
                     QStringLiteral("-o"), moe});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString im = m_dir.filePath(QStringLiteral("moe.imatrix"));
        r = cli({QStringLiteral("imatrix"), moe, QStringLiteral("--text"), m_calibration, QStringLiteral("--ctx"), QStringLiteral("64"),
                 QStringLiteral("--chunks"), QStringLiteral("2"), QStringLiteral("-o"), im});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        auto data = imatrix::read(im.toStdString());
        QVERIFY(data.isOk());
        const imatrix::Entry& gate = data->entries.at("blk.0.ffn_gate_exps.weight");
        QCOMPARE(gate.counts.size(), size_t(16));
        int64_t pairs = 0;
        for (int64_t c : gate.counts) pairs += c;
        QCOMPARE(pairs, int64_t(2 * 64 * 4)); // tokens × experts per token
        QCOMPARE(gate.cols(), int64_t(256));
        QCOMPARE(gate.sums, data->entries.at("blk.0.ffn_up_exps.weight").sums);
        QCOMPARE(data->entries.at("blk.0.ffn_down_exps.weight").cols(), int64_t(128));
        QCOMPARE(data->entries.at("blk.0.ffn_down_exps.weight").counts, gate.counts);
        for (size_t e = 0; e < 16; ++e)
            if (gate.counts[e] == 0)
                for (int64_t j = 0; j < 256; ++j) QCOMPARE(gate.sums[e * 256 + size_t(j)], 0.0f);

        const QString out = m_dir.filePath(QStringLiteral("moe-q4.gguf"));
        r = cli({QStringLiteral("quantize"), moe, out, QStringLiteral("Q4_0"), QStringLiteral("--imatrix"), im});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        auto src = gguf::File::open(moe.toStdString()), q = gguf::File::open(out.toStdString());
        QVERIFY(src.isOk() && q.isOk());
        auto imp = imatrix::importanceFor(*data, "blk.0.ffn_up_exps.weight", 256, 16);
        QVERIFY(imp.isOk() && imp->has_value());
        const gguf::TensorInfo *s = nullptr, *t = nullptr;
        for (const gguf::TensorInfo& x : src->tensors()) if (x.name == "blk.0.ffn_up_exps.weight") s = &x;
        for (const gguf::TensorInfo& x : q->tensors()) if (x.name == "blk.0.ffn_up_exps.weight") t = &x;
        QVERIFY(s && t && t->type == quant::Type::Q4_0);
        const uint64_t rb = *quant::rowBytes(quant::Type::Q4_0, 256);
        std::vector<uint8_t> expect(rb);
        const auto* f = reinterpret_cast<const float*>(src->tensorData(*s));
        for (int64_t e : {0, 7, 15}) // first row of a few experts, each with its own importance
            for (int64_t row : {e * 128, e * 128 + 127}) {
                QVERIFY(quant::quantizeRowWeighted(quant::Type::Q4_0, f + row * 256, expect.data(), 256, (*imp)->data() + e * 256).isOk());
                QVERIFY2(std::memcmp(expect.data(), q->tensorData(*t) + uint64_t(row) * rb, rb) == 0, qPrintable(QString::number(row)));
            }
    }

    // llama.cpp's mix rules that depend on having an imatrix (ffn_down of the first eighth).
    void mixRulesFollowImatrix() {
        quant::TensorRole role;
        role.name = "blk.1.ffn_down.weight";
        role.ne0 = 4096;
        role.nDims = 2;
        role.nLayers = 16;
        auto type = [&](const char* mix, bool imatrix) {
            role.hasImatrix = imatrix;
            return quant::chooseType(*quant::mixFromName(mix), role);
        };
        QCOMPARE(type("Q4_0", false), quant::Type::Q4_0);
        QCOMPARE(type("Q4_0", true), quant::Type::Q4_1);
        QCOMPARE(type("Q5_0", true), quant::Type::Q5_1);
        QCOMPARE(type("IQ4_NL", false), quant::Type::Q5_K);
        QCOMPARE(type("IQ4_NL", true), quant::Type::IQ4_NL);
        QCOMPARE(type("IQ4_XS", true), quant::Type::IQ4_XS);
        role.name = "blk.2.ffn_down.weight"; // past the first eighth: no change
        QCOMPARE(type("Q4_0", true), quant::Type::Q4_0);
    }

    // The expert-count rules that mixtral-tiny (8 experts) does not reach: llama.cpp's low-bit
    // attn_v takes Q4_K from 4 experts up, while its attn_k / attn_output rules need exactly 8.
    void mixRulesFollowExpertCount() {
        quant::TensorRole role;
        role.ne0 = 4096;
        role.nDims = 2;
        role.nLayers = 16;
        role.hasImatrix = true;
        auto type = [&](const char* mix, const char* name, uint32_t experts) {
            role.name = name;
            role.nExpert = experts;
            return quant::chooseType(*quant::mixFromName(mix), role);
        };
        QCOMPARE(type("IQ2_XXS", "blk.5.attn_v.weight", 0), quant::Type::Q2_K);
        QCOMPARE(type("IQ2_XXS", "blk.5.attn_v.weight", 16), quant::Type::Q4_K);
        QCOMPARE(type("IQ2_XXS", "blk.5.attn_k.weight", 16), quant::Type::IQ2_XXS);
        QCOMPARE(type("IQ2_XXS", "blk.5.attn_k.weight", 8), quant::Type::Q4_K);
        QCOMPARE(type("Q4_K_M", "blk.5.attn_k.weight", 16), quant::Type::Q4_K);
        QCOMPARE(type("Q4_K_M", "blk.5.attn_output.weight", 128), quant::Type::Q4_K);
        QCOMPARE(type("Q4_K_M", "blk.5.attn_output.weight", 8), quant::Type::Q5_K);
    }

    void ggufFileRoundTrip() {
        imatrix::Data d;
        d.datasets = {"calibration.txt"};
        d.chunkCount = 3;
        d.chunkSize = 128;
        d.entries["blk.0.attn_q.weight"] = {{1.0f, 4.0f, 9.0f, 16.0f}, {2}};
        d.entries["blk.0.ffn_up_exps.weight"] = {{1, 2, 3, 4, 5, 6}, {3, 0, 1}}; // 3 experts of 2 columns
        const std::string path = m_dir.filePath(QStringLiteral("rt.imatrix")).toStdString();
        QVERIFY(imatrix::write(d, path).isOk());
        auto file = gguf::File::open(path);
        QVERIFY(file.isOk());
        QCOMPARE(file->getString("general.type").value(), std::string("imatrix"));
        bool sawCounts = false;
        for (const gguf::TensorInfo& t : file->tensors())
            if (t.name == "blk.0.ffn_up_exps.weight.counts") {
                sawCounts = true;
                QCOMPARE(t.ne[0], uint64_t(1));
                QCOMPARE(t.ne[1], uint64_t(3));
            }
        QVERIFY(sawCounts);
        auto back = imatrix::read(path);
        QVERIFY2(back.isOk(), back.status().toString().c_str());
        QVERIFY(!back->legacy);
        QCOMPARE(back->chunkCount, 3u);
        QCOMPARE(back->chunkSize, 128u);
        QCOMPARE(back->datasets, d.datasets);
        QCOMPARE(back->entries.size(), size_t(2));
        QCOMPARE(back->entries.at("blk.0.ffn_up_exps.weight").counts, (std::vector<int64_t>{3, 0, 1}));
        auto imp = imatrix::importanceFor(*back, "blk.0.ffn_up_exps.weight", 2, 3);
        QVERIFY(imp.isOk() && imp->has_value());
        QCOMPARE(**imp, (std::vector<float>{1.0f / 3, 2.0f / 3, 1.0f, 1.0f, 5.0f, 6.0f})); // no tokens: 1
        QVERIFY(!imatrix::importanceFor(*back, "blk.0.attn_q.weight", 8, 1).isOk()); // wrong width
        QVERIFY(!imatrix::importanceFor(*back, "blk.9.attn_q.weight", 4, 1)->has_value());
    }

    // A file in llama.cpp's legacy format, written here from its documented layout.
    void legacyFormatReader() {
        const QString path = m_dir.filePath(QStringLiteral("legacy.dat"));
        {
            std::ofstream o(path.toStdString(), std::ios::binary);
            writeI32(o, 2);
            for (const auto& [name, values] : {std::pair<std::string, std::vector<float>>{"blk.0.attn_k.weight", {10, 20, 30, 40}},
                                               {"output.weight", {5, 5}}}) {
                writeI32(o, int32_t(name.size()));
                o.write(name.data(), std::streamsize(name.size()));
                writeI32(o, 10); // ncall
                writeI32(o, int32_t(values.size()));
                o.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * 4));
            }
            writeI32(o, 7); // chunks
            writeI32(o, 9);
            o.write("wiki.test", 9);
        }
        auto d = imatrix::read(path.toStdString());
        QVERIFY2(d.isOk(), d.status().toString().c_str());
        QVERIFY(d->legacy);
        QCOMPARE(d->chunkCount, 7u);
        QCOMPARE(d->datasets, std::vector<std::string>{"wiki.test"});
        auto imp = imatrix::importanceFor(*d, "blk.0.attn_k.weight", 4, 1);
        QVERIFY(imp.isOk() && imp->has_value());
        QCOMPARE(**imp, (std::vector<float>{1, 2, 3, 4}));

        // Truncated, empty and foreign files fail with a message naming the problem.
        std::vector<char> bytes;
        {
            std::ifstream in(path.toStdString(), std::ios::binary);
            bytes.assign(std::istreambuf_iterator<char>(in), {});
        }
        const std::string cut = m_dir.filePath(QStringLiteral("cut.dat")).toStdString();
        std::ofstream(cut, std::ios::binary).write(bytes.data(), 40);
        auto bad = imatrix::read(cut);
        QVERIFY(!bad.isOk());
        QVERIFY2(bad.status().toString().find("truncated") != std::string::npos, bad.status().toString().c_str());
        auto model = imatrix::read(m_model);
        QVERIFY(!model.isOk());
        QVERIFY2(model.status().toString().find("metadata is missing") != std::string::npos, model.status().toString().c_str());
        QVERIFY(!imatrix::read(m_dir.filePath(QStringLiteral("absent")).toStdString()).isOk());
    }

    // hearth-cli imatrix, then quantize --imatrix: the quantized rows are quantizeRowWeighted's
    // with the file's importance (byte-identical to ggml's, test_ggml_oracle), not the plain ones.
    void quantizeWithImatrixCli() {
        const QString im = m_dir.filePath(QStringLiteral("st.imatrix"));
        const QString model = QString::fromStdString(m_model);
        Cli r = cli({QStringLiteral("imatrix"), model, QStringLiteral("--text"), m_calibration, QStringLiteral("--ctx"),
                     QStringLiteral("128"), QStringLiteral("--chunks"), QStringLiteral("4"), QStringLiteral("-o"), im,
                     QStringLiteral("--threads"), QStringLiteral("2")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains(QStringLiteral("Final estimate: PPL = ")));
        auto data = imatrix::read(im.toStdString());
        QVERIFY(data.isOk());
        QCOMPARE(data->chunkCount, 4u);
        QCOMPARE(data->chunkSize, 128u);
        QCOMPARE(data->entries.at("blk.3.attn_output.weight").counts, std::vector<int64_t>{512});

        const QString plainOut = m_dir.filePath(QStringLiteral("plain.gguf")), weightedOut = m_dir.filePath(QStringLiteral("w.gguf"));
        r = cli({QStringLiteral("quantize"), model, weightedOut, QStringLiteral("Q4_0"), QStringLiteral("--imatrix"), im});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.err.contains(QStringLiteral("(imatrix)")));
        r = cli({QStringLiteral("quantize"), model, plainOut, QStringLiteral("Q4_0")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        auto src = gguf::File::open(m_model);
        auto weighted = gguf::File::open(weightedOut.toStdString()), plain = gguf::File::open(plainOut.toStdString());
        QVERIFY(src.isOk() && weighted.isOk() && plain.isOk());
        int checked = 0;
        for (const gguf::TensorInfo& t : weighted->tensors()) {
            if (t.type != quant::Type::Q4_0) continue;
            const gguf::TensorInfo* s = nullptr;
            for (const gguf::TensorInfo& x : src->tensors())
                if (x.name == t.name) s = &x;
            QVERIFY(s && s->type == quant::Type::F32);
            auto imp = imatrix::importanceFor(*data, t.name, int64_t(t.ne[0]), 1);
            QVERIFY(imp.isOk());
            if (t.name == "token_embd.weight") { // a lookup table, never a matmul input: no entry
                QVERIFY(!imp->has_value());
                continue;
            }
            QVERIFY2(imp->has_value(), t.name.c_str());
            const uint64_t rb = *quant::rowBytes(t.type, t.ne[0]);
            std::vector<uint8_t> expect(rb);
            const auto* f = reinterpret_cast<const float*>(src->tensorData(*s));
            for (uint64_t row = 0; row < t.ne[1]; ++row) {
                QVERIFY(quant::quantizeRowWeighted(t.type, f + row * t.ne[0], expect.data(), int64_t(t.ne[0]), (*imp)->data()).isOk());
                QVERIFY2(std::memcmp(expect.data(), weighted->tensorData(t) + row * rb, rb) == 0, t.name.c_str());
            }
            ++checked;
        }
        QCOMPARE(checked, 30); // q, k, v, output, gate, up of 5 layers (ffn_down's 172 columns stay F16)
        bool differs = false;
        for (const gguf::TensorInfo& t : plain->tensors())
            for (const gguf::TensorInfo& u : weighted->tensors())
                if (t.name == u.name && t.type == quant::Type::Q4_0)
                    differs = differs || std::memcmp(plain->tensorData(t), weighted->tensorData(u), t.bytes) != 0;
        QVERIFY2(differs, "negative control: the imatrix changed nothing");

        // stories260K's 64-wide rows take no 256-block type: IQ2_XXS falls back to 32-block types
        // (IQ4_NL, Q4_0) that need no imatrix, so llama.cpp makes it without one, and so do we.
        r = cli({QStringLiteral("quantize"), model, m_dir.filePath(QStringLiteral("x.gguf")), QStringLiteral("IQ2_XXS")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(!r.err.contains(QStringLiteral("-> IQ2_XXS")));
        // A mismatched imatrix is an error.
        imatrix::Data other;
        other.entries["blk.0.attn_q.weight"] = {std::vector<float>(128, 1.0f), {10}}; // 128 columns, not 64
        const QString otherPath = m_dir.filePath(QStringLiteral("other.imatrix"));
        QVERIFY(imatrix::write(other, otherPath.toStdString()).isOk());
        r = cli({QStringLiteral("quantize"), model, m_dir.filePath(QStringLiteral("y.gguf")), QStringLiteral("Q4_0"),
                 QStringLiteral("--imatrix"), otherPath});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("another model")), qPrintable(r.err));
        r = cli({QStringLiteral("quantize"), model, m_dir.filePath(QStringLiteral("z.gguf")), QStringLiteral("Q4_0"),
                 QStringLiteral("--imatrix"), model});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("metadata is missing")), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestImatrix)
#include "test_imatrix.moc"
