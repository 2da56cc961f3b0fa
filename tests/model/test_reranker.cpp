// Rerankers against llama.cpp's ranking scores (tests/tools/ref_rank.mjs, node-llama-cpp's ranking
// context). A bert reranker (a synthesized bert-rerank-tiny: bert-tiny with bge-reranker's
// classification head and rank pooling, the BGE WordPiece vocabulary): the same input ids for
// each (query, document) pair, the same scores, in F32 and Q8_0, on every device; /v1/rerank in
// llama-server's, Jina's and TEI's shapes; and what a reranker refuses. A Qwen3 reranker
// (qwen3-rerank-tiny: the yes / no head on the last token, softmaxed, and the rerank prompt, the
// Qwen2 vocabulary): the same scores for the same ids, and /v1/rerank filling the file's prompt.
#include "../server/http_test_support.h"
#include "encoder_test_support.h"
#include "hearth/devices.h"
#include "hearth/server.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace hearth;
using hearth::test::OJson;

namespace {

const char* const kQuery = "what is a panda?";
const char* const kDocs[] = {"hi", "The giant panda is a bear species endemic to China.",
                             "Pandas eat bamboo for most of the day, and they sleep in between meals.",
                             "paris is the capital of france"};

struct ReferenceRanking {
    std::vector<double> scores;                 // probabilities (sigmoid of the head's first output)
    std::vector<std::vector<int32_t>> tokens;   // the ids each pair evaluated
};

ReferenceRanking referenceRanking(const std::string& model, QString& err) {
    QStringList args{QDir(test::sourceDir()).filePath(QStringLiteral("tests/tools/ref_rank.mjs")),
                     QString::fromStdString(model), QStringLiteral("--query"), QString::fromUtf8(kQuery)};
    // (the scores: a bert head's sigmoid; for qwen3, already the softmax's "yes")
    for (const char* d : kDocs) args << QStringLiteral("--doc") << QString::fromUtf8(d);
    QProcess p;
    p.start(QStringLiteral("node"), args);
    ReferenceRanking r;
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }
    const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    for (const auto& v : o.value(QStringLiteral("scores")).toArray()) r.scores.push_back(v.toDouble());
    for (const auto& list : o.value(QStringLiteral("tokens")).toArray()) {
        r.tokens.emplace_back();
        for (const auto& v : list.toArray()) r.tokens.back().push_back(v.toInt());
    }
    return r;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Our inputs for the pairs and the relevance probabilities the engine gives them.
std::vector<std::vector<int32_t>> ourInputs(const Engine& e) {
    std::vector<std::vector<int32_t>> inputs;
    const auto q = e.tokenizer().encode(kQuery, false, false).value();
    for (const char* d : kDocs) inputs.push_back(rankingInput(e.tokenizer(), q, e.tokenizer().encode(d, false, false).value()));
    return inputs;
}

std::vector<double> ourScores(Engine& e, const std::vector<std::vector<int32_t>>& inputs) {
    auto got = embedAndWait(e, test::request(inputs));
    if (!got) qWarning("%s", got.status().toString().c_str());
    std::vector<double> out;
    if (got)
        for (const auto& v : got->vectors) out.push_back(v.empty() ? NAN : sigmoid(v[0]));
    return out;
}

} // namespace

class TestReranker : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::string path(const char* name) const { return m_dir.filePath(QString::fromUtf8(name)).toStdString(); }

    // The synthesized `preset` of `type` (the BGE vocabulary; Qwen2's for a qwen3 preset), made on
    // first use; "" (after a failed check) when synth fails.
    std::string synthesized(const char* preset, const char* type) {
        const std::string file = path((std::string(preset) + "-" + type + ".gguf").c_str());
        if (QFile::exists(QString::fromStdString(file))) return file;
        const bool qwen = std::string(preset).rfind("qwen3", 0) == 0;
        const QString vocab = qwen ? QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-qwen2.gguf")))
                                  : test::bgeVocabPath();
        const QString err = test::synthPreset(QString::fromLatin1(preset), QString::fromLatin1(type), vocab, file);
        if (!err.isEmpty()) {
            qWarning("synth %s %s: %s", preset, type, qPrintable(err));
            return {};
        }
        return file;
    }

    void agreesWithLlamaCpp(const char* type, double tolerance) {
        const std::string model = synthesized("bert-rerank-tiny", type);
        QVERIFY(!model.empty());
        QString refErr;
        const ReferenceRanking ref = referenceRanking(model, refErr);
        QVERIFY2(ref.scores.size() == std::size(kDocs), qPrintable(QStringLiteral("ref_rank.mjs failed: ") + refErr));
        auto engine = test::openEngine(model);
        QVERIFY2(engine.isOk(), engine.status().toString().c_str());
        QCOMPARE((*engine)->model().pooling, Pooling::Rank);
        QCOMPARE((*engine)->model().rankOutputs, 1);
        const auto inputs = ourInputs(**engine);
        QCOMPARE(inputs, ref.tokens); // [CLS] query [SEP] document, as llama.cpp evaluates
        const std::vector<double> mine = ourScores(**engine, inputs);
        QCOMPARE(mine.size(), ref.scores.size());
        double worst = 0.0;
        for (size_t i = 0; i < mine.size(); ++i) {
            qInfo("%s, document %zu: %.6f (llama.cpp %.6f)", type, i, mine[i], ref.scores[i]);
            worst = std::max(worst, std::abs(mine[i] - ref.scores[i]));
        }
        QVERIFY2(worst <= tolerance, qPrintable(QStringLiteral("max |diff| %1").arg(worst)));
        // The synthesized head is not flat: the scores differ between documents, so a head not
        // run (or run on the wrong row) would show.
        QVERIFY(std::abs(ref.scores[0] - ref.scores[1]) > 1e-3);
    }

private Q_SLOTS:
    void initTestCase() {
        if (!test::referenceEmbeddingsMissing().isEmpty()) QSKIP(qPrintable(test::referenceEmbeddingsMissing()));
        if (!QFile::exists(test::bgeVocabPath())) QSKIP("no BGE vocabulary in the reference folder");
        QVERIFY(m_dir.isValid());
    }

    void scoresMatchLlamaCppF32() { agreesWithLlamaCpp("F32", 1e-4); }
    void scoresMatchLlamaCppQ8_0() { agreesWithLlamaCpp("Q8_0", 5e-3); } // both quantize activations

    void gpuDevicesAgree() {
        std::vector<std::string> gpus;
        for (const DeviceDescription& d : listDevices().devices)
            if (d.kind != DeviceKind::Cpu) gpus.push_back(d.id);
        if (gpus.empty()) QSKIP("no GPU device on this machine");
        const bool qwen = QFile::exists(QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-qwen2.gguf"))));
        for (const char* preset : {"bert-rerank-tiny", "qwen3-rerank-tiny"}) {
            if (!qwen && std::string(preset) == "qwen3-rerank-tiny") continue;
            const std::string model = synthesized(preset, std::string(preset) == "bert-rerank-tiny" ? "F32" : "Q8_0");
            QVERIFY(!model.empty());
            auto cpu = test::openEngine(model);
            QVERIFY(cpu.isOk());
            const auto inputs = ourInputs(**cpu);
            const std::vector<double> want = ourScores(**cpu, inputs);
            for (const std::string& id : gpus) {
                auto gpu = test::openEngine(model, 512, id);
                QVERIFY2(gpu.isOk(), gpu.status().toString().c_str());
                const std::vector<double> got = ourScores(**gpu, inputs);
                QCOMPARE(got.size(), want.size());
                for (size_t i = 0; i < got.size(); ++i) {
                    qInfo("%s %s, document %zu: %.6f (CPU %.6f)", preset, id.c_str(), i, got[i], want[i]);
                    QVERIFY(std::abs(got[i] - want[i]) < 1e-3);
                }
            }
        }
    }

    void rerankEndpoint() {
        const std::string model = synthesized("bert-rerank-tiny", "F32");
        QVERIFY(!model.empty());
        auto opened = test::openEngine(model);
        QVERIFY(opened.isOk());
        std::shared_ptr<Engine> engine = std::move(*opened);
        const std::vector<double> want = ourScores(*engine, ourInputs(*engine));
        server::ServerConfig sc;
        sc.port = 0;
        sc.log = [](const std::string&) {};
        server::Server srv(sc);
        QVERIFY(srv.start().isOk());
        srv.setEngine(engine, "rerank-tiny");
        const int port = srv.port();
        OJson docs = OJson::array();
        for (const char* d : kDocs) docs.push_back(d);
        OJson body = {{"model", "rerank-tiny"}, {"query", kQuery}, {"documents", docs}};
        auto r = test::postJson(port, "/v1/rerank", body.dump());
        QVERIFY2(r && r->status == 200, r ? r->body.c_str() : "no answer");
        OJson j = test::parse(r->body);
        QCOMPARE(j["object"].get<std::string>(), std::string("list"));
        QVERIFY(j["usage"]["prompt_tokens"].get<int>() > 20);
        const OJson& results = j["results"];
        QCOMPARE(results.size(), std::size(kDocs));
        double last = INFINITY;
        for (const OJson& e : results) { // most relevant first; the score is the head's logit
            const size_t i = e["index"].get<size_t>();
            const double s = e["relevance_score"].get<double>();
            QVERIFY(s <= last);
            last = s;
            QVERIFY2(std::abs(sigmoid(s) - want[i]) < 1e-6, e.dump().c_str());
            QVERIFY(!e.contains("document"));
        }
        QCOMPARE(results[0]["index"].get<int>(), 0); // "hi" scores highest on these random weights
        // top_n and the documents returned, on another path, documents given as objects.
        body["top_n"] = 2;
        body["return_documents"] = true;
        body["documents"][1] = {{"text", kDocs[1]}};
        r = test::postJson(port, "/rerank", body.dump());
        QCOMPARE(r->status, 200);
        j = test::parse(r->body);
        QCOMPARE(j["results"].size(), size_t(2));
        QCOMPARE(j["results"][0]["document"]["text"].get<std::string>(), std::string(kDocs[j["results"][0]["index"].get<size_t>()]));
        // TEI's shape: texts in, a bare array of {index, score, text} out.
        r = test::postJson(port, "/reranking", OJson({{"query", kQuery}, {"texts", docs}, {"return_text", true}}).dump());
        QCOMPARE(r->status, 200);
        j = test::parse(r->body);
        QVERIFY2(j.is_array() && j.size() == std::size(kDocs) && j[0].contains("score") && j[0].contains("text"), r->body.c_str());

        // Bad requests: 400 naming the field.
        OJson many = OJson::array();
        for (int i = 0; i < 10000; ++i) many.push_back("doc");
        const std::pair<OJson, const char*> bad[] = {
            {{{"documents", docs}}, "query"},
            {{{"query", ""}, {"documents", docs}}, "query"},
            {{{"query", 3}, {"documents", docs}}, "query"},
            {{{"query", "q"}}, "documents"},
            {{{"query", "q"}, {"documents", OJson::array()}}, "documents"},
            {{{"query", "q"}, {"documents", OJson::array({"a", 7})}}, "documents[1]"},
            {{{"query", "q"}, {"documents", many}}, "documents"},
            {{{"query", "q"}, {"documents", docs}, {"top_n", 0}}, "top_n"},
            {{{"query", "q"}, {"documents", OJson::array({std::string(4000, 'x') + " word"})}}, "documents[0]"},
        };
        for (const auto& [b, param] : bad) {
            auto e = test::postJson(port, "/v1/rerank", b.dump());
            QVERIFY2(e->status == 400, (b.dump().substr(0, 200) + " -> " + e->body).c_str());
            QVERIFY2(test::parse(e->body)["error"]["param"] == param, e->body.c_str());
        }
        QCOMPARE(test::client(port).Get("/v1/rerank")->status, 405);
        srv.stop();

        // A model that is no reranker: 400.
        const std::string plain = synthesized("bert-tiny", "F32");
        QVERIFY(!plain.empty());
        auto bert = test::openEngine(plain);
        QVERIFY(bert.isOk());
        server::Server other(sc);
        QVERIFY(other.start().isOk());
        other.setEngine(std::shared_ptr<Engine>(std::move(*bert)), "bert");
        auto no = test::postJson(other.port(), "/v1/rerank", OJson({{"query", "q"}, {"documents", docs}}).dump());
        QCOMPARE(no->status, 400);
        QCOMPARE(test::parse(no->body)["error"]["code"].get<std::string>(), std::string("model_not_supported"));
        other.stop();
    }

    void otherPoolingIsRefused() {
        const std::string model = synthesized("bert-rerank-tiny", "F32");
        QVERIFY(!model.empty());
        auto engine = test::openEngine(model);
        QVERIFY(engine.isOk());
        const auto inputs = ourInputs(**engine);
        for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
            auto got = embedAndWait(**engine, test::request(inputs, p));
            QVERIFY(!got.isOk());
            QVERIFY2(got.status().message().find("reranker") != std::string::npos, got.status().toString().c_str());
        }
        EmbeddingRequest cut = test::request(inputs);
        cut.dimensions = 1;
        QVERIFY(!embedAndWait(**engine, cut).isOk());
        // Rank pooling on a model without the head is refused too.
        const std::string plain = synthesized("bert-tiny", "F32");
        QVERIFY(!plain.empty());
        auto bert = test::openEngine(plain);
        QVERIFY(bert.isOk());
        auto refused = embedAndWait(**bert, test::request(inputs, Pooling::Rank));
        QVERIFY(!refused.isOk());
        QVERIFY2(refused.status().message().find("reranker") != std::string::npos, refused.status().toString().c_str());
    }

    // Qwen3-Reranker's way: the last token's normed row through the yes / no rows, softmaxed; the
    // score is the probability of "yes", as llama.cpp gives it, for the ids llama.cpp evaluated.
    void qwen3ScoresMatchLlamaCpp() {
        if (!QFile::exists(QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-qwen2.gguf")))))
            QSKIP("no Qwen2 vocabulary in the test data");
        std::shared_ptr<Engine> engine;
        ReferenceRanking ref;
        for (const auto& [type, tolerance] : {std::pair{"Q8_0", 5e-3}, std::pair{"F16", 2e-4}}) {
            const std::string model = synthesized("qwen3-rerank-tiny", type);
            QVERIFY(!model.empty());
            QString refErr;
            ref = referenceRanking(model, refErr);
            QVERIFY2(ref.scores.size() == std::size(kDocs), qPrintable(QStringLiteral("ref_rank.mjs failed: ") + refErr));
            auto opened = test::openEngine(model);
            QVERIFY2(opened.isOk(), opened.status().toString().c_str());
            engine = std::move(*opened);
            QCOMPARE(engine->model().pooling, Pooling::Rank);
            QCOMPARE(engine->model().rankOutputs, 2);
            QVERIFY(engine->model().rankTemplate.find("{document}") != std::string::npos);
            auto got = embedAndWait(*engine, test::request(ref.tokens));
            QVERIFY2(got.isOk(), got.status().toString().c_str());
            double worst = 0.0;
            for (size_t i = 0; i < ref.scores.size(); ++i) {
                const std::vector<float>& v = got->vectors[i];
                QCOMPARE(v.size(), size_t(2));
                QVERIFY(std::abs(v[0] + v[1] - 1.0f) < 1e-5); // a softmax over yes and no
                qInfo("qwen3 %s, document %zu: %.6f (llama.cpp %.6f)", type, i, double(v[0]), ref.scores[i]);
                worst = std::max(worst, std::abs(double(v[0]) - ref.scores[i]));
            }
            QVERIFY2(worst <= tolerance, qPrintable(QStringLiteral("max |diff| %1").arg(worst)));
            QVERIFY(std::abs(ref.scores[0] - ref.scores[1]) > 1e-3); // the last row, not another
        }

        // /v1/rerank fills the file's prompt with the query and each document (llama-server's
        // way: the whole text tokenized, its special tokens read); it reads as llama.cpp's ids do.
        server::ServerConfig sc;
        sc.port = 0;
        sc.log = [](const std::string&) {};
        server::Server srv(sc);
        QVERIFY(srv.start().isOk());
        srv.setEngine(engine, "qwen3-rerank");
        OJson docs = OJson::array();
        for (const char* d : kDocs) docs.push_back(d);
        auto r = test::postJson(srv.port(), "/v1/rerank", OJson({{"query", kQuery}, {"documents", docs}}).dump());
        QVERIFY2(r && r->status == 200, r ? r->body.c_str() : "no answer");
        const OJson results = test::parse(r->body)["results"];
        QCOMPARE(results.size(), std::size(kDocs));
        const tokenizer::Tokenizer& tok = engine->tokenizer();
        for (const OJson& e : results) {
            const size_t i = e["index"].get<size_t>();
            std::string prompt = engine->model().rankTemplate;
            prompt.replace(prompt.find("{query}"), 7, kQuery);
            prompt.replace(prompt.find("{document}"), 10, kDocs[i]);
            const std::vector<int32_t> ids = tok.encode(prompt, false, true).value();
            QCOMPARE(tok.decode(ids).value(), tok.decode(ref.tokens[i]).value()); // the same text
            const std::vector<float> mine = test::embedOne(*engine, ids);
            QVERIFY2(std::abs(e["relevance_score"].get<double>() - double(mine.at(0))) < 1e-6, e.dump().c_str());
        }
        srv.stop();
    }
};

QTEST_GUILESS_MAIN(TestReranker)
#include "test_reranker.moc"
