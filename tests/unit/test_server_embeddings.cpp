// The embedding endpoints over real loopback connections with the fake engine: OpenAI's
// /v1/embeddings (every input form, base64, dimensions, usage, errors in OpenAI's shape) and
// Ollama's /api/embed and legacy /api/embeddings, and a hostile corpus that must never reach the
// engine.
#include "../server/fake_server.h"
#include "../server/hostile_embeddings.h"
#include "../server/http_test_support.h"
#include "test_support.h"

#include "hearth/server.h"

#include <QtTest>

#include <cstring>

using namespace hearth;
using namespace hearth::test;
using hearth::server::Server;
using hearth::server::ServerConfig;

namespace {


bool isOllamaError(const OJson& j) {
    return j.is_object() && j.size() == 1 && j.contains("error") && j["error"].is_string() &&
           !j["error"].get<std::string>().empty();
}

std::vector<float> decodeBase64Floats(const std::string& s) {
    auto val = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
    };
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i + 3 < s.size(); i += 4) {
        const int a = val(s[i]), b = val(s[i + 1]), c = val(s[i + 2]), d = val(s[i + 3]);
        bytes.push_back(uint8_t(a << 2 | b >> 4));
        if (c >= 0) bytes.push_back(uint8_t((b & 15) << 4 | c >> 2));
        if (d >= 0) bytes.push_back(uint8_t((c & 3) << 6 | d));
    }
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

} // namespace

class TestServerEmbeddings : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void openAIInputForms() {
        START_FAKE_SERVER(f, ServerConfig{}, 64);
        // One string.
        auto r = postJson(f.port, "/v1/embeddings", R"({"model":"x","input":"Once upon a time"})");
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["object"].get<std::string>(), std::string("list"));
        QCOMPARE(j["model"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(j["data"].size(), size_t(1));
        QCOMPARE(j["data"][0]["object"].get<std::string>(), std::string("embedding"));
        QCOMPARE(j["data"][0]["index"].get<int>(), 0);
        QCOMPARE(j["data"][0]["embedding"].size(), size_t(8));
        const auto ids = f.engine->tokenizer().encode("Once upon a time", true, false).value();
        QCOMPARE(f.engine->lastEmbedding().inputs.at(0), ids); // BOS as the vocabulary adds it
        QCOMPARE(j["usage"]["prompt_tokens"].get<int>(), int(ids.size()));
        QCOMPARE(j["usage"]["total_tokens"].get<int>(), int(ids.size()));
        QVERIFY(f.engine->lastEmbedding().normalize);
        // Strings, token ids, lists of token ids; /embeddings too.
        r = postJson(f.port, "/embeddings", R"({"input":["a","b c"]})");
        QCOMPARE(r->status, 200);
        QCOMPARE(parse(r->body)["data"].size(), size_t(2));
        QCOMPARE(parse(r->body)["data"][1]["index"].get<int>(), 1);
        r = postJson(f.port, "/v1/embeddings", R"({"model":"x","input":[1,403,407]})");
        QCOMPARE(r->status, 200);
        QCOMPARE(f.engine->lastEmbedding().inputs, (std::vector<std::vector<int32_t>>{{1, 403, 407}}));
        QCOMPARE(parse(r->body)["usage"]["prompt_tokens"].get<int>(), 3);
        r = postJson(f.port, "/v1/embeddings", R"({"model":"x","input":[[1,2],[3]]})");
        QCOMPARE(r->status, 200);
        QCOMPARE(f.engine->lastEmbedding().inputs, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
        // Different inputs, different vectors; the same input, the same vector.
        const OJson d = parse(r->body)["data"];
        QVERIFY(d[0]["embedding"] != d[1]["embedding"]);
    }

    void base64AndDimensions() {
        START_FAKE_SERVER(f, ServerConfig{}, 64);
        auto fl = postJson(f.port, "/v1/embeddings", R"({"input":[[1,2,3]]})");
        auto b64 = postJson(f.port, "/v1/embeddings", R"({"input":[[1,2,3]],"encoding_format":"base64"})");
        QCOMPARE(b64->status, 200);
        const std::vector<float> floats = parse(fl->body)["data"][0]["embedding"].get<std::vector<float>>();
        const std::string s = parse(b64->body)["data"][0]["embedding"].get<std::string>();
        QCOMPARE(s.size(), size_t((8 * 4 + 2) / 3 * 4));
        QCOMPARE(decodeBase64Floats(s), floats);
        auto cut = postJson(f.port, "/v1/embeddings", R"({"input":[[1,2,3]],"dimensions":3})");
        QCOMPARE(cut->status, 200);
        QCOMPARE(parse(cut->body)["data"][0]["embedding"].size(), size_t(3));
        QCOMPARE(f.engine->lastEmbedding().dimensions, 3);
        auto wide = postJson(f.port, "/v1/embeddings", R"({"input":"a","dimensions":9})");
        QCOMPARE(wide->status, 400);
        QCOMPARE(parse(wide->body)["error"]["param"].get<std::string>(), std::string("dimensions"));
    }

    void ollamaEmbed() {
        START_FAKE_SERVER(f, ServerConfig{}, 64);
        auto r = postJson(f.port, "/api/embed", R"({"model":"fake-model:latest","input":["a","b"]})");
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["model"].get<std::string>(), std::string("fake-model:latest"));
        QCOMPARE(j["embeddings"].size(), size_t(2));
        QCOMPARE(j["embeddings"][0].size(), size_t(8));
        QVERIFY(j["total_duration"].is_number_integer());
        QVERIFY(j["load_duration"].is_number_integer());
        QVERIFY(j["prompt_eval_count"].get<int>() >= 2);
        QVERIFY(f.engine->lastEmbedding().normalize);
        // No input: no vectors, and nothing asked of the engine.
        const int before = f.engine->submitted();
        r = postJson(f.port, "/api/embed", R"({"model":"m"})");
        QCOMPARE(r->status, 200);
        QCOMPARE(parse(r->body)["embeddings"], OJson::array());
        QCOMPARE(f.engine->submitted(), before);
        // Truncation (the default) cuts an input longer than the context (64 here).
        std::string longText;
        for (int i = 0; i < 100; ++i) longText += " the";
        r = postJson(f.port, "/api/embed", OJson{{"model", "m"}, {"input", longText}}.dump());
        QCOMPARE(r->status, 200);
        QCOMPARE(f.engine->lastEmbedding().inputs.at(0).size(), size_t(64));
        r = postJson(f.port, "/api/embed", OJson{{"model", "m"}, {"input", longText}, {"truncate", false}}.dump());
        QCOMPARE(r->status, 400);
        QVERIFY(isOllamaError(parse(r->body)));
        // Legacy: one raw (not normalized) vector.
        r = postJson(f.port, "/api/embeddings", R"({"model":"m","prompt":"hello"})");
        QCOMPARE(r->status, 200);
        QCOMPARE(parse(r->body)["embedding"].size(), size_t(8));
        QVERIFY(!f.engine->lastEmbedding().normalize);
        r = postJson(f.port, "/api/embeddings", R"({"model":"m","prompt":""})");
        QCOMPARE(r->status, 200);
        QCOMPARE(parse(r->body)["embedding"], OJson::array());
    }

    void wrongMethodsAndMetrics() {
        START_FAKE_SERVER(f, ServerConfig{}, 64);
        QCOMPARE(client(f.port).Get("/v1/embeddings")->status, 405);
        QVERIFY(isErrorShape(parse(client(f.port).Get("/v1/embeddings")->body)));
        QCOMPARE(postJson(f.port, "/v1/embeddings", R"({"input":"a"})")->status, 200);
        auto m = client(f.port).Get("/metrics");
        QVERIFY(m->body.find("hearth_http_requests_total{path=\"/v1/embeddings\",code=\"200\"} 1") != std::string::npos);
    }

    void hostileEmbeddingCorpus() {
        START_FAKE_SERVER(f, ServerConfig{}, 64);
        const auto corpus = hostileEmbeddingBodies(f.engine->model().nVocab, f.engine->model().contextLength);
        int i = 0;
        for (const HostileEmbeddingBody& h : corpus) {
            auto r = postJson(f.port, h.path, h.body);
            const QString what = QStringLiteral("#%1 %2: %3")
                                     .arg(i++)
                                     .arg(QString::fromStdString(h.path))
                                     .arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(r, qPrintable(what));
            QVERIFY2(r->status >= 400 && r->status < 500, qPrintable(what + " -> " + QString::number(r->status)));
            const OJson body = parse(r->body);
            if (h.path == "/v1/embeddings") QVERIFY2(isErrorShape(body), qPrintable(what + " " + QString::fromStdString(r->body)));
            else QVERIFY2(isOllamaError(body), qPrintable(what + " " + QString::fromStdString(r->body.substr(0, 200))));
        }
        qInfo("%d hostile bodies refused", i);
        QVERIFY(i > 100);
        QCOMPARE(f.engine->submitted(), 0);
        QCOMPARE(postJson(f.port, "/v1/embeddings", R"({"input":"still fine"})")->status, 200);
    }
};

QTEST_GUILESS_MAIN(TestServerEmbeddings)
#include "test_server_embeddings.moc"
