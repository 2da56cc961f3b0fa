// Speculative decoding through the server on the real engine (stories260K, n-gram drafting on):
// OpenAI's predicted outputs give the same answer as without a prediction and report accepted
// and rejected prediction tokens in usage; per-request draft limits; /metrics counts drafts; and
// hostile prediction and speculation fields are 400s naming the field, leaving no KV block held.
#include "../server/http_test_support.h"
#include "../server/model_server.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/server.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::test;
using hearth::server::Server;
using hearth::server::ServerConfig;

namespace {

const char* kStoriesFile = "models/stories260K.gguf";

OJson chatBody(int maxTokens) {
    OJson b;
    b["messages"] = OJson::array({{{"role", "user"}, {"content", "Tell me a story"}}});
    b["max_tokens"] = maxTokens;
    b["temperature"] = 0;
    return b;
}

} // namespace

class TestServerSpeculation : public QObject {
    Q_OBJECT
    std::shared_ptr<Engine> m_engine;
    std::unique_ptr<Server> m_server;
    int m_port = 0;

    // A 400 whose error names `param`.
    void expectBadParam(const OJson& body, const std::string& param) {
        auto r = postJson(m_port, "/v1/chat/completions", body.dump());
        QVERIFY(r);
        QCOMPARE(r->status, 400);
        OJson j = parse(r->body);
        QVERIFY2(isErrorShape(j), r->body.c_str());
        QCOMPARE(j["error"]["param"].get<std::string>(), param);
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(kStoriesFile);
        EngineConfig ec;
        ec.modelPath = testDataPath(kStoriesFile);
        ec.contextLength = 256;
        ec.speculation.ngram = true;
        ec.speculation.adaptive = false; // every proposal verified (the policy would draft little here)
        test::ModelServer m = test::startModelServer(ec, "stories260K");
        QVERIFY2(m.error.empty(), m.error.c_str());
        m_engine = m.engine;
        m_server = std::move(m.server);
        m_port = m.port;
    }
    void cleanupTestCase() {
        if (m_server) m_server->stop();
    }

    void predictionGivesTheSameAnswer() {
        OJson plainBody = chatBody(120);
        plainBody["speculative"] = {{"n_max", 0}};
        auto plain = postJson(m_port, "/v1/chat/completions", plainBody.dump());
        QCOMPARE(plain->status, 200);
        OJson pj = parse(plain->body);
        const std::string answer = pj["choices"][0]["message"]["content"].get<std::string>();
        QVERIFY(!answer.empty());
        QCOMPARE(pj["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int>(), 0);
        QVERIFY(!pj["usage"].contains("speculative")); // nothing drafted

        OJson predicted = chatBody(120);
        predicted["prediction"] = {{"type", "content"}, {"content", answer}};
        auto r = postJson(m_port, "/v1/chat/completions", predicted.dump());
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(), answer);
        const OJson& details = j["usage"]["completion_tokens_details"];
        qInfo("accepted %d, rejected %d prediction tokens of %d completion tokens",
              details["accepted_prediction_tokens"].get<int>(), details["rejected_prediction_tokens"].get<int>(),
              j["usage"]["completion_tokens"].get<int>());
        QVERIFY(details["accepted_prediction_tokens"].get<int>() > 60);
        QVERIFY(details["rejected_prediction_tokens"].get<int>() >= 0);
        QVERIFY(j["usage"]["speculative"]["draft_tokens"].get<int>() > 0);

        // Text parts, and a stream: the same text.
        OJson parts = chatBody(120);
        parts["prediction"] = {{"type", "content"},
                               {"content", OJson::array({{{"type", "text"}, {"text", answer.substr(0, 40)}},
                                                         {{"type", "text"}, {"text", answer.substr(40)}}})}};
        parts["stream"] = true;
        auto s = postJson(m_port, "/v1/chat/completions", parts.dump());
        QCOMPARE(s->status, 200);
        std::string streamed;
        for (const std::string& d : sseData(s->body)) {
            if (d == "[DONE]") continue;
            OJson chunk = parse(d);
            if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content") &&
                chunk["choices"][0]["delta"]["content"].is_string())
                streamed += chunk["choices"][0]["delta"]["content"].get<std::string>();
        }
        QCOMPARE(streamed, answer);

        // llama.cpp's flat fields on /v1/completions.
        auto c = postJson(m_port, "/v1/completions",
                          R"({"prompt":"Once upon a time","max_tokens":40,"temperature":0,"speculative.n_max":2,"speculative.n_min":1,"speculative.p_min":0.5})");
        QCOMPARE(c->status, 200);
        auto c0 = postJson(m_port, "/v1/completions",
                           R"({"prompt":"Once upon a time","max_tokens":40,"temperature":0,"speculative.n_max":0})");
        QCOMPARE(parse(c->body)["choices"][0]["text"], parse(c0->body)["choices"][0]["text"]);

        auto metrics = client(m_port).Get("/metrics");
        QVERIFY(metrics);
        QVERIFY(metrics->body.find("hearth_spec_draft_tokens_total") != std::string::npos);
        QVERIFY(metrics->body.find("hearth_spec_accepted_tokens_total") != std::string::npos);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    void hostileFieldsAre400s() {
        OJson b = chatBody(8);
        b["prediction"] = "just text";
        expectBadParam(b, "prediction");
        b["prediction"] = {{"type", "image"}, {"content", "x"}};
        expectBadParam(b, "prediction.type");
        b["prediction"] = {{"type", "content"}};
        expectBadParam(b, "prediction.content");
        b["prediction"] = {{"type", "content"}, {"content", 42}};
        expectBadParam(b, "prediction.content");
        b["prediction"] = {{"type", "content"}, {"content", OJson::array({{{"type", "image_url"}, {"text", "x"}}})}};
        expectBadParam(b, "prediction.content");
        b["prediction"] = {{"type", "content"}, {"content", std::string((1 << 20) + 1, 'a')}};
        expectBadParam(b, "prediction.content");
        // Within the byte limit but more tokens than the context (256).
        std::string words;
        for (int i = 0; i < 400; ++i) words += " story";
        b["prediction"] = {{"type", "content"}, {"content", words}};
        expectBadParam(b, "prediction.content");
        b.erase("prediction");
        b["speculative"] = {{"n_max", 100}};
        expectBadParam(b, "speculative.n_max");
        b["speculative"] = {{"n_max", 2}, {"n_min", 3}};
        expectBadParam(b, "speculative.n_min");
        b["speculative"] = {{"p_min", 1.5}};
        expectBadParam(b, "speculative.p_min");
        b["speculative"] = {{"p_min", "high"}};
        expectBadParam(b, "speculative.p_min");
        b.erase("speculative");
        b["speculative.p_min"] = -0.1;
        expectBadParam(b, "speculative.p_min");
        b.erase("speculative.p_min");
        b["speculative"] = "fast";
        expectBadParam(b, "speculative");
        // Invalid UTF-8 inside the prediction: the body is not JSON.
        const std::string raw = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                                "\"prediction\":{\"type\":\"content\",\"content\":\"a\xff\xfe\"}}";
        auto r = postJson(m_port, "/v1/chat/completions", raw);
        QCOMPARE(r->status, 400);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
        QCOMPARE(m_engine->stats().running, 0);
    }
};

QTEST_MAIN(TestServerSpeculation)
#include "test_server_speculation.moc"
