// The server on the real engine and model (stories260K): greedy completions equal the engine's
// own output and llama.cpp's reference text, chat, streaming, n > 1, stop strings and usage.
#include "../server/http_test_support.h"
#include "../server/model_server.h"
#include "gguf_rewrite.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/server.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <condition_variable>
#include <thread>
#include <mutex>

using namespace hearth;
using namespace hearth::test;
using hearth::server::Server;
using hearth::server::ServerConfig;

namespace {

const char* kModel = "models/stories260K.gguf";

// Collects the text of choice 0 straight from the engine.
class TextSink : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        std::lock_guard<std::mutex> lock(m_mu);
        if (t.choice == 0) text += t.text;
    }
    void onFinish(FinishReason, const Usage&) override { end(); }
    void onError(const Status& s) override {
        error = s;
        end();
    }
    void wait() {
        std::unique_lock<std::mutex> lock(m_mu);
        m_cv.wait(lock, [&] { return m_done; });
    }
    std::string text;
    Status error;

private:
    void end() {
        std::lock_guard<std::mutex> lock(m_mu);
        m_done = true;
        m_cv.notify_all();
    }
    std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_done = false;
};

} // namespace

class TestServerModel : public QObject {
    Q_OBJECT
    std::shared_ptr<Engine> m_engine;
    std::unique_ptr<Server> m_server;
    int m_port = 0;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(kModel);
        EngineConfig ec;
        ec.modelPath = testDataPath(kModel);
        ec.contextLength = 256;
        test::ModelServer m = test::startModelServer(ec, "stories260K");
        QVERIFY2(m.error.empty(), m.error.c_str());
        m_engine = m.engine;
        m_server = std::move(m.server);
        m_port = m.port;
    }
    void cleanupTestCase() {
        if (m_server) m_server->stop();
    }

    void greedyCompletionMatchesEngine() {
        auto r = postJson(m_port, "/v1/completions",
                          R"({"prompt":"Once upon a time","max_tokens":32,"temperature":0})");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        const std::string text = j["choices"][0]["text"].get<std::string>();
        QVERIFY2(text.rfind(", there was a little girl named Lily.", 0) == 0, text.c_str());
        QCOMPARE(j["usage"]["prompt_tokens"].get<int>(), 5);
        QCOMPARE(j["usage"]["completion_tokens"].get<int>(), 32);
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));

        auto sink = std::make_shared<TextSink>();
        GenerationRequest g;
        g.prompt = m_engine->tokenizer().encode("Once upon a time", true, true).value();
        g.sampling.temperature = 0.0f;
        g.maxTokens = 32;
        g.sink = sink;
        QVERIFY(m_engine->submit(g));
        sink->wait();
        QVERIFY(sink->error.isOk());
        QCOMPARE(text, sink->text);

        auto s = postJson(m_port, "/v1/completions",
                          R"({"prompt":"Once upon a time","max_tokens":32,"temperature":0,"stream":true})");
        QCOMPARE(s->status, 200);
        QCOMPARE(streamedText(s->body), text);
    }

    void chatAndStreaming() {
        auto r = postJson(m_port, "/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":16,"seed":1})");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["object"].get<std::string>(), std::string("chat.completion"));
        QVERIFY(j["choices"][0]["message"]["content"].is_string());
        auto s = postJson(m_port, "/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":16, "stream":true,"stream_options":{"include_usage":true}})");
        QCOMPARE(s->status, 200);
        auto data = sseData(s->body);
        QCOMPARE(data.back(), std::string("[DONE]"));
        QVERIFY(parse(data[data.size() - 2])["usage"]["completion_tokens"].get<int>() > 0);
    }

    void nAndStop() {
        auto r = postJson(m_port, "/v1/completions",
                          R"({"prompt":"Once upon a time","max_tokens":16,"n":2,"seed":3,"temperature":0.9})");
        QCOMPARE(r->status, 200);
        QCOMPARE(parse(r->body)["choices"].size(), size_t(2));
        auto s = postJson(m_port, "/v1/completions",
                          R"({"prompt":"Once upon a time","max_tokens":32,"temperature":0,"stop":["Lily"]})");
        QCOMPARE(s->status, 200);
        OJson j = parse(s->body);
        QCOMPARE(j["choices"][0]["text"].get<std::string>(), std::string(", there was a little girl named "));
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("stop"));
    }

    void modelsDirectory() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString src = QString::fromStdString(testDataPath(kModel));
        QVERIFY(QFile::copy(src, dir.filePath("alpha.gguf")));
        QVERIFY(QFile::copy(src, dir.filePath("beta.gguf")));
        QFile notModel(dir.filePath("notes.txt"));
        QVERIFY(notModel.open(QIODevice::WriteOnly));
        notModel.close();
        // A split model is listed once, by its first part, and loads with all its parts.
        QVERIFY(writeSplitCopy(testDataPath(kModel), dir.filePath("gamma").toStdString(), 20).isOk());
        hearth::server::ModelDirectoryConfig dc;
        dc.dir = dir.path().toStdString();
        dc.engine.contextLength = 128;
        dc.ttlSeconds = 1;
        dc.maxLoaded = 1; // each model in place of the last
        ServerConfig c;
        c.port = 0;
        c.log = [](const std::string&) {};
        Server server(c);
        QVERIFY(server.start().isOk());
        server.setModelProvider(hearth::server::makeDirectoryModelProvider(dc));
        const int port = server.port();
        auto list = [&] { return parse(client(port).Get("/v1/models")->body)["data"]; };
        OJson models = list();
        QCOMPARE(models.size(), size_t(3));
        QCOMPARE(models[0]["id"].get<std::string>(), std::string("alpha"));
        QCOMPARE(models[2]["id"].get<std::string>(), std::string("gamma-00001-of-00003"));
        QVERIFY(!models[0]["loaded"].get<bool>());
        auto a = postJson(port, "/v1/completions", R"({"model":"alpha","prompt":"Once","max_tokens":4})");
        QCOMPARE(a->status, 200);
        QCOMPARE(parse(a->body)["model"].get<std::string>(), std::string("alpha"));
        QVERIFY(list()[0]["loaded"].get<bool>());
        auto b = postJson(port, "/v1/completions", R"({"model":"beta","prompt":"Once","max_tokens":4})");
        QCOMPARE(b->status, 200);
        QCOMPARE(parse(b->body)["model"].get<std::string>(), std::string("beta"));
        models = list();
        QVERIFY(!models[0]["loaded"].get<bool>());
        QVERIFY(models[1]["loaded"].get<bool>());
        auto g = postJson(port, "/v1/completions", R"({"model":"gamma-00001-of-00003","prompt":"Once","max_tokens":4})");
        QCOMPARE(g->status, 200);
        QCOMPARE(parse(g->body)["model"].get<std::string>(), std::string("gamma-00001-of-00003"));
        QCOMPARE(postJson(port, "/v1/completions", R"({"model":"gamma-00002-of-00003","prompt":"x"})")->status, 404);
        auto missing = postJson(port, "/v1/completions", R"({"model":"../alpha","prompt":"x"})");
        QCOMPARE(missing->status, 404);
        QCOMPARE(parse(missing->body)["error"]["code"].get<std::string>(), std::string("model_not_found"));
        QVERIFY(list()[2]["loaded"].get<bool>());
        // Idle past the TTL: unloaded.
        QTRY_VERIFY_WITH_TIMEOUT(!list()[2]["loaded"].get<bool>(), 5000);
        server.stop();
    }

    void sixtyFourStreamsAndHalfOfThemKilled() {
        // 64 streaming clients at once; the odd ones hang up after a few chunks. The others all
        // get the greedy text, and the killed ones' sequences and KV blocks are released.
        const std::string expected = [&] {
            auto r = postJson(m_port, "/v1/completions",
                              R"({"prompt":"Once upon a time","max_tokens":40,"temperature":0})");
            return parse(r->body)["choices"][0]["text"].get<std::string>();
        }();
        auto metric = [&](const std::string& name) {
            const std::string body = client(m_port).Get("/metrics")->body;
            const size_t at = body.find("\n" + name + " ");
            return at == std::string::npos ? -1.0 : std::stod(body.substr(at + name.size() + 2));
        };
        std::atomic<int> good{0}, killed{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < 64; ++i)
            threads.emplace_back([&, i] {
                auto c = client(m_port);
                const std::string body = R"({"prompt":"Once upon a time","max_tokens":)" +
                                         std::string(i % 2 ? "200" : "40") + R"(,"temperature":0,"stream":true})";
                std::string received;
                int chunks = 0;
                httplib::Request req;
                req.method = "POST";
                req.path = "/v1/completions";
                req.body = body;
                req.set_header("Content-Type", "application/json");
                req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
                    received.append(data, n);
                    return !(i % 2 && ++chunks >= 3); // odd clients hang up
                };
                httplib::Response res;
                httplib::Error err = httplib::Error::Success;
                const bool sent = c.send(req, res, err);
                if (i % 2) {
                    ++killed;
                } else if (sent && res.status == 200 && streamedText(received) == expected) {
                    ++good;
                } else {
                    qWarning("client %d: %s", i, received.substr(0, 200).c_str());
                }
            });
        for (auto& t : threads) t.join();
        const double stepsAtJoin = metric("hearth_engine_steps_total");
        QCOMPARE(good.load(), 32);
        QCOMPARE(killed.load(), 32);
        // Every request has ended or been cancelled: nothing runs, no block is held. Had the
        // hung-up streams not been cancelled, they would still need well over 100 steps each
        // batch to reach their 200 tokens.
        QTRY_COMPARE_WITH_TIMEOUT(metric("hearth_requests_running"), 0.0, 10000);
        QVERIFY2(metric("hearth_engine_steps_total") - stepsAtJoin < 30,
                 qPrintable(QString::number(metric("hearth_engine_steps_total") - stepsAtJoin)));
        QTRY_COMPARE_WITH_TIMEOUT(metric("hearth_kv_blocks_used"), 0.0, 10000);
        QVERIFY(metric("hearth_kv_blocks_total") > 0);
    }

    void tokenize() {
        auto t = postJson(m_port, "/tokenize", R"({"content":"Once upon a time"})");
        QCOMPARE(t->status, 200);
        QCOMPARE(parse(t->body)["tokens"].dump(), std::string("[403,407,261,378]"));
        auto ctx = postJson(m_port, "/v1/completions", R"({"prompt":"Once","max_tokens":1000})");
        QCOMPARE(ctx->status, 400);
    }
};

QTEST_GUILESS_MAIN(TestServerModel)
#include "test_server_model.moc"
