// hearth-server as a gateway (ServerConfig::upstreams): a real server on stories260K plays the
// remote, a spy records what reaches an upstream, and the gateway lists and forwards their models.
#include "http_test_support.h"
#include "loopback_server.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/server.h"

#include <QtTest>

#include <atomic>
#include <map>
#include <chrono>
#include <mutex>
#include <thread>

using namespace hearth;
using namespace hearth::test;
using hearth::server::RequestRecord;
using hearth::server::Server;
using hearth::server::ServerConfig;

namespace {

const char* kModel = "models/stories260K.gguf";

// A plain httplib server on a free loopback port, served from a thread.
struct SpyServer {
    httplib::Server http;
    std::thread thread;
    int port = 0;
    std::mutex mu;
    httplib::Headers lastHeaders;
    std::atomic<bool> streamEnded{false};
    std::atomic<int> streamChunks{0};
    std::atomic<bool> lateModel{false}; // listed only once set

    bool start() {
        port = http.bind_to_any_port("127.0.0.1");
        if (port <= 0) return false;
        thread = std::thread([this] { http.listen_after_bind(); });
        for (int i = 0; i < 2000 && !http.is_running(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return true;
    }
    void stop() {
        http.stop();
        if (thread.joinable()) thread.join();
    }
    ~SpyServer() { stop(); }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
};

std::string bearer(const std::string& key) { return "Bearer " + key; }

} // namespace

class TestServerGateway : public QObject {
    Q_OBJECT
    std::shared_ptr<Engine> m_engine;
    std::unique_ptr<Server> m_remote;   // stories260K, key "remote-key"
    SpyServer m_spy;                    // spy-model, slow-model, drip-model; key "spy-key"
    SpyServer m_doomed;                 // doomed-model; stopped before the 502 check
    std::unique_ptr<Server> m_gateway;  // no local model, key "gw-key"
    std::unique_ptr<Server> m_mixed;    // a local "stories260K" too (hides the remote's)
    std::mutex m_logMu;
    std::vector<RequestRecord> m_records;
    std::vector<std::string> m_mixedLog;
    int m_remotePort = 0, m_gatewayPort = 0, m_mixedPort = 0;

    httplib::Headers gwAuth() const { return {{"Authorization", bearer("gw-key")}}; }

    OJson getJson(int port, const std::string& path, httplib::Headers h = {}) {
        auto c = client(port);
        auto r = c.Get(path.c_str(), h);
        if (!r) return OJson();
        return parse(r->body);
    }

    void setUpSpy() {
        m_spy.http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
            {
                std::lock_guard<std::mutex> lock(m_spy.mu);
                m_spy.lastHeaders = req.headers;
            }
            res.set_content(std::string("{\"object\":\"list\",\"data\":[{\"id\":\"spy-model\"},"
                                        "{\"id\":\"slow-model\"},{\"id\":\"drip-model\"}") +
                                (m_spy.lateModel ? ",{\"id\":\"late-model\"}" : "") + "]}",
                            "application/json");
        });
        m_spy.http.Post("/v1/chat/completions", [this](const httplib::Request& req,
                                                       httplib::Response& res) {
            {
                std::lock_guard<std::mutex> lock(m_spy.mu);
                m_spy.lastHeaders = req.headers;
            }
            const OJson body = parse(req.body);
            const std::string model = body.value("model", "");
            if (model == "slow-model") {
                std::this_thread::sleep_for(std::chrono::milliseconds(3500));
                res.set_content("{}", "application/json");
                return;
            }
            if (model == "drip-model") {
                // 100 events, one each 50 ms: the gateway's client leaves after the first.
                res.set_chunked_content_provider(
                    "text/event-stream",
                    [this](size_t, httplib::DataSink& sink) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(50));
                        const int n = ++m_spy.streamChunks;
                        const std::string event = "data: {\"n\":" + std::to_string(n) + "}\n\n";
                        if (!sink.write(event.data(), event.size())) return false;
                        if (n >= 100) sink.done();
                        return true;
                    },
                    [this](bool) { m_spy.streamEnded = true; });
                return;
            }
            res.status = 418; // passed back as it is
            res.set_content("{\"echo\":" + req.body + "}", "application/json");
        });
        m_spy.http.Post(R"(/(v1/(embeddings|responses|messages)|api/(chat|generate|embed)))",
                        [](const httplib::Request& req, httplib::Response& res) {
            res.set_content("{\"path\":\"" + req.path + "\"}", "application/json");
        });
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(kModel);
        LoopbackServer remote;
        const std::string started = startLoopbackServer(remote, testDataPath(kModel), 256, "stories260K", "remote-key");
        QVERIFY2(started.empty(), started.c_str());
        m_engine = remote.engine;
        m_remote = std::move(remote.server);
        m_remotePort = m_remote->port();

        setUpSpy();
        QVERIFY(m_spy.start());
        m_doomed.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("{\"data\":[{\"id\":\"doomed-model\"}]}", "application/json");
        });
        QVERIFY(m_doomed.start());

        const std::string remoteUrl = "http://127.0.0.1:" + std::to_string(m_remotePort) + "/v1";
        ServerConfig gc;
        gc.port = 0;
        gc.apiKey = "gw-key";
        gc.upstreamTimeoutSeconds = 2;
        gc.upstreams = {{remoteUrl, "remote-key"}, {m_spy.url(), "spy-key"}, {m_doomed.url(), ""}};
        gc.log = [](const std::string&) {};
        gc.requestLog = [this](const RequestRecord& r) {
            std::lock_guard<std::mutex> lock(m_logMu);
            m_records.push_back(r);
        };
        m_gateway = std::make_unique<Server>(gc);
        QVERIFY(m_gateway->start().isOk());
        m_gatewayPort = m_gateway->port();

        ServerConfig mc;
        mc.port = 0;
        mc.upstreams = {{remoteUrl, "remote-key"}, {m_spy.url(), "spy-key"}};
        mc.log = [this](const std::string& line) {
            std::lock_guard<std::mutex> lock(m_logMu);
            m_mixedLog.push_back(line);
        };
        m_mixed = std::make_unique<Server>(mc);
        QVERIFY(m_mixed->start().isOk());
        m_mixed->setEngine(m_engine, "stories260K");
        m_mixedPort = m_mixed->port();

        // /health is OK once the upstream lists have answered.
        bool healthy = false;
        for (int i = 0; i < 100 && !healthy; ++i) {
            auto c = client(m_gatewayPort);
            auto r = c.Get("/health");
            healthy = r && r->status == 200;
            if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        QVERIFY(healthy);
    }

    void cleanupTestCase() {
        m_mixed.reset();
        m_gateway.reset();
        m_remote.reset();
    }

    void badUpstreamUrlRefusesToStart() {
        ServerConfig c;
        c.port = 0;
        c.log = [](const std::string&) {};
        c.upstreams = {{"gpu-box:8000/v1", ""}};
        Server s(c);
        const Status st = s.start();
        QVERIFY(!st.isOk());
        QVERIFY2(st.message().find("upstream URL") != std::string::npos, st.message().c_str());
    }

    void healthWaitsForTheUpstreams() {
        ServerConfig c;
        c.port = 0;
        c.log = [](const std::string&) {};
        c.upstreamConnectTimeoutSeconds = 1;
        c.upstreams = {{"http://127.0.0.1:1/v1", ""}}; // nothing listens on port 1
        Server s(c);
        QVERIFY(s.start().isOk());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        auto cl = client(s.port());
        auto r = cl.Get("/health");
        QVERIFY(r);
        QCOMPARE(r->status, 503);
    }

    void modelsAreMerged() {
        const OJson list = getJson(m_gatewayPort, "/v1/models", gwAuth());
        QVERIFY2(list.is_object() && list["data"].is_array(), list.dump().c_str());
        std::map<std::string, std::string> owners;
        for (const OJson& m : list["data"]) owners[m["id"].get<std::string>()] = m["owned_by"].get<std::string>();
        QCOMPARE(owners["stories260K"], "127.0.0.1:" + std::to_string(m_remotePort));
        QCOMPARE(owners["spy-model"], "127.0.0.1:" + std::to_string(m_spy.port));
        QCOMPARE(owners["doomed-model"], "127.0.0.1:" + std::to_string(m_doomed.port));
        const OJson one = getJson(m_gatewayPort, "/v1/models/spy-model", gwAuth());
        QCOMPARE(one.value("id", ""), std::string("spy-model"));

        // The mixed gateway: its own stories260K (owned_by hearth) hides the remote's.
        const OJson mixed = getJson(m_mixedPort, "/v1/models");
        int stories = 0;
        bool spy = false;
        for (const OJson& m : mixed["data"]) {
            if (m["id"] == "stories260K") {
                ++stories;
                QCOMPARE(m["owned_by"].get<std::string>(), std::string("hearth"));
            }
            spy = spy || m["id"] == "spy-model";
        }
        QCOMPARE(stories, 1);
        QVERIFY(spy);
        bool said = false;
        for (int i = 0; i < 100 && !said; ++i) {
            {
                std::lock_guard<std::mutex> lock(m_logMu);
                for (const std::string& line : m_mixedLog)
                    said = said || (line.find("'stories260K'") != std::string::npos &&
                                    line.find("local wins") != std::string::npos);
            }
            if (!said) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        QVERIFY2(said, "the log says the local model hides the upstream's");
    }

    void chatIsForwarded() {
        const std::string body =
            "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"Once upon\"}],"
            "\"max_tokens\":24,\"temperature\":0}";
        auto direct = postJson(m_remotePort, "/v1/chat/completions", body,
                               {{"Authorization", bearer("remote-key")}});
        auto via = postJson(m_gatewayPort, "/v1/chat/completions", body, gwAuth());
        QVERIFY(direct && via);
        QCOMPARE(direct->status, 200);
        QCOMPARE(via->status, 200);
        const OJson a = parse(direct->body), b = parse(via->body);
        const std::string text = a["choices"][0]["message"]["content"].get<std::string>();
        QVERIFY(!text.empty());
        QCOMPARE(b["choices"][0]["message"]["content"].get<std::string>(), text);
        QCOMPARE(via->get_header_value("X-Hearth-Upstream"), "127.0.0.1:" + std::to_string(m_remotePort));
        // Without the gateway's key nothing is forwarded.
        auto noKey = postJson(m_gatewayPort, "/v1/chat/completions", body);
        QVERIFY(noKey);
        QCOMPARE(noKey->status, 401);
    }

    void completionIsForwarded() {
        const std::string body =
            "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"max_tokens\":24,"
            "\"temperature\":0}";
        auto direct = postJson(m_remotePort, "/v1/completions", body,
                               {{"Authorization", bearer("remote-key")}});
        auto via = postJson(m_gatewayPort, "/completions", body, gwAuth()); // the unversioned path too
        QVERIFY(direct && via);
        QCOMPARE(via->status, 200);
        const std::string text = parse(direct->body)["choices"][0]["text"].get<std::string>();
        QVERIFY(!text.empty());
        QCOMPARE(parse(via->body)["choices"][0]["text"].get<std::string>(), text);
        // The mixed gateway serves its local stories260K itself.
        auto local = postJson(m_mixedPort, "/v1/completions", body);
        QVERIFY(local);
        QCOMPARE(local->status, 200);
        QVERIFY(local->get_header_value("X-Hearth-Upstream").empty());
        QCOMPARE(parse(local->body)["choices"][0]["text"].get<std::string>(), text);
    }

    void streamIsRelayedInChunks() {
        const std::string body =
            "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"Once upon\"}],"
            "\"max_tokens\":48,\"temperature\":0,\"stream\":true}";
        auto plain = postJson(m_remotePort, "/v1/chat/completions",
                              "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":"
                              "\"Once upon\"}],\"max_tokens\":48,\"temperature\":0}",
                              {{"Authorization", bearer("remote-key")}});
        QVERIFY(plain && plain->status == 200);
        const std::string expected = parse(plain->body)["choices"][0]["message"]["content"].get<std::string>();

        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/chat/completions";
        req.headers = gwAuth();
        req.set_header("Content-Type", "application/json");
        req.body = body;
        int pieces = 0;
        std::string received;
        req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
            ++pieces;
            received.append(d, n);
            return true;
        };
        auto c = client(m_gatewayPort);
        httplib::Response res;
        httplib::Error error = httplib::Error::Success;
        QVERIFY(c.send(req, res, error));
        QCOMPARE(res.status, 200);
        QVERIFY(res.get_header_value("Content-Type").rfind("text/event-stream", 0) == 0);
        const auto events = sseData(received);
        QVERIFY2(events.size() > 3, received.c_str());
        QCOMPARE(events.back(), std::string("[DONE]"));
        QCOMPARE(streamedText(received), expected);
        QVERIFY2(pieces > 1, "the stream arrives in more than one piece");
        // The log line is written after the last byte, so it may come just after the answer.
        std::string line;
        for (int i = 0; i < 100 && line.empty(); ++i) {
            {
                std::lock_guard<std::mutex> lock(m_logMu);
                for (const RequestRecord& r : m_records)
                    if (r.streamed && r.upstream == "127.0.0.1:" + std::to_string(m_remotePort))
                        line = server::formatRequestRecord(r);
            }
            if (line.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        QVERIFY2(line.find(" via 127.0.0.1:") != std::string::npos, "the request log names the upstream");
    }

    void upstreamKeyIsSentClientKeyIsNot() {
        auto r = postJson(m_gatewayPort, "/v1/chat/completions",
                          "{\"model\":\"spy-model\",\"messages\":[]}",
                          {{"Authorization", bearer("gw-key")}, {"x-api-key", "gw-key"}});
        QVERIFY(r);
        QCOMPARE(r->status, 418); // the upstream's status and body come back as they are
        QCOMPARE(parse(r->body)["echo"]["model"].get<std::string>(), std::string("spy-model"));
        std::lock_guard<std::mutex> lock(m_spy.mu);
        QCOMPARE(m_spy.lastHeaders.find("Authorization")->second, bearer("spy-key"));
        for (const auto& [name, value] : m_spy.lastHeaders)
            QVERIFY2(value.find("gw-key") == std::string::npos, name.c_str());
    }

    void embeddingsAndResponsesAreForwarded() {
        for (const char* path : {"/v1/embeddings", "/embeddings", "/v1/responses"}) {
            auto r = postJson(m_gatewayPort, path, "{\"model\":\"spy-model\",\"input\":\"hi\"}", gwAuth());
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            const std::string expected = std::string(path).rfind("/v1/", 0) == 0 ? path : std::string("/v1") + path;
            QCOMPARE(parse(r->body).value("path", ""), expected);
        }
    }

    // Anthropic's and Ollama's routes reach an upstream too: /v1/messages under its base URL,
    // /api/... from its root; upstream models are in /api/tags.
    void everyDialectIsForwarded() {
        const std::string messages =
            R"({"model":"stories260K","max_tokens":16,"temperature":0,"messages":[{"role":"user","content":"Once upon"}]})";
        auto direct = postJson(m_remotePort, "/v1/messages", messages, {{"Authorization", bearer("remote-key")}});
        auto via = postJson(m_gatewayPort, "/v1/messages", messages, gwAuth());
        QVERIFY(direct && via);
        QCOMPARE(via->status, 200);
        QCOMPARE(parse(via->body)["content"], parse(direct->body)["content"]);
        QCOMPARE(via->get_header_value("X-Hearth-Upstream"), "127.0.0.1:" + std::to_string(m_remotePort));

        const std::string chat = R"({"model":"stories260K","stream":false,"options":{"temperature":0,"num_predict":16},)"
                                 R"("messages":[{"role":"user","content":"Once upon"}]})";
        direct = postJson(m_remotePort, "/api/chat", chat, {{"Authorization", bearer("remote-key")}});
        via = postJson(m_gatewayPort, "/api/chat", chat, gwAuth());
        QVERIFY(direct && via);
        QCOMPARE(via->status, 200);
        QVERIFY(!parse(direct->body)["message"]["content"].get<std::string>().empty());
        QCOMPARE(parse(via->body)["message"]["content"], parse(direct->body)["message"]["content"]);
        // Streamed by default, as Ollama's routes are: NDJSON lines relayed, ending done.
        via = postJson(m_gatewayPort, "/api/generate", R"({"model":"stories260K","prompt":"Once","options":{"num_predict":8}})",
                       gwAuth());
        QVERIFY(via);
        QCOMPARE(via->status, 200);
        const std::vector<OJson> lines = ndjson(via->body);
        QVERIFY2(lines.size() > 2 && lines.back()["done"] == true, via->body.c_str());
        // From the upstream's root, not its /v1 base.
        for (const char* path : {"/api/embed", "/v1/messages"}) {
            auto r = postJson(m_gatewayPort, path, R"({"model":"spy-model","input":"hi","stream":false})", gwAuth());
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            QCOMPARE(parse(r->body).value("path", ""), std::string(path));
        }
        // Listed beside the local ones, naming the upstream.
        const OJson tags = getJson(m_gatewayPort, "/api/tags", gwAuth());
        bool remote = false, spy = false;
        for (const OJson& m : tags["models"]) {
            remote = remote || (m["name"] == "stories260K" && m["remote_host"] == "127.0.0.1:" + std::to_string(m_remotePort));
            spy = spy || m["name"] == "spy-model";
        }
        QVERIFY2(remote && spy, tags.dump().c_str());
        // A model nobody serves: Ollama's 404, not forwarded.
        auto missing = postJson(m_gatewayPort, "/api/chat", R"({"model":"nothing","messages":[]})", gwAuth());
        QVERIFY(missing);
        QVERIFY2(missing->status == 404 || missing->status == 503, missing->body.c_str());
        QVERIFY(parse(missing->body)["error"].is_string());
    }

    void stopDoesNotWaitForAnUpstream() {
        ServerConfig c;
        c.port = 0;
        c.log = [](const std::string&) {};
        c.upstreams = {{m_spy.url(), "spy-key"}};
        auto gw = std::make_unique<Server>(c);
        QVERIFY(gw->start().isOk());
        for (int i = 0; i < 100; ++i) { // until the list has answered
            auto cl = client(gw->port());
            auto h = cl.Get("/health");
            if (h && h->status == 200) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        const int port = gw->port();
        int status = 0;
        std::thread caller([&] {
            auto r = postJson(port, "/v1/chat/completions", "{\"model\":\"slow-model\",\"messages\":[]}");
            status = r ? r->status : -1;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto t0 = std::chrono::steady_clock::now();
        gw->stop();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        caller.join();
        QVERIFY2(seconds < 2.0, std::to_string(seconds).c_str());
        QVERIFY(status == 503 || status == -1);
    }

    void unknownModelIs404() {
        auto r = postJson(m_gatewayPort, "/v1/chat/completions",
                          "{\"model\":\"no-such-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                          gwAuth());
        QVERIFY(r);
        QCOMPARE(r->status, 404);
        const OJson j = parse(r->body);
        QVERIFY(isErrorShape(j));
        QCOMPARE(j["error"]["code"].get<std::string>(), std::string("model_not_found"));
    }

    void aModelAddedUpstreamIsFoundOnDemand() {
        const std::string body = "{\"model\":\"late-model\",\"messages\":[]}";
        auto before = postJson(m_gatewayPort, "/v1/chat/completions", body, gwAuth());
        QVERIFY(before);
        QCOMPARE(before->status, 404);
        m_spy.lateModel = true;
        // The lists are fetched again when an unknown model is asked for (at most every 2 s).
        int status = 0;
        for (int i = 0; i < 40 && status != 418; ++i) {
            auto r = postJson(m_gatewayPort, "/v1/chat/completions", body, gwAuth());
            status = r ? r->status : -1;
            if (status != 418) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        QCOMPARE(status, 418);
    }

    void silentUpstreamIs504() {
        auto r = postJson(m_gatewayPort, "/v1/chat/completions",
                          "{\"model\":\"slow-model\",\"messages\":[]}", gwAuth());
        QVERIFY(r);
        QCOMPARE(r->status, 504);
        const OJson j = parse(r->body);
        QVERIFY(isErrorShape(j));
        QCOMPARE(j["error"]["code"].get<std::string>(), std::string("upstream_timeout"));
    }

    void clientDisconnectEndsTheUpstreamRequest() {
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/chat/completions";
        req.headers = gwAuth();
        req.set_header("Content-Type", "application/json");
        req.body = "{\"model\":\"drip-model\",\"messages\":[],\"stream\":true}";
        std::string first;
        req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
            first.append(d, n);
            return false; // leave after the first piece
        };
        auto c = client(m_gatewayPort);
        httplib::Response res;
        httplib::Error error = httplib::Error::Success;
        c.send(req, res, error);
        QVERIFY2(first.find("\"n\":1") != std::string::npos, first.c_str());
        for (int i = 0; i < 100 && !m_spy.streamEnded; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
        QVERIFY2(m_spy.streamEnded, "the upstream's stream ended with the client");
        QVERIFY2(m_spy.streamChunks < 60, std::to_string(m_spy.streamChunks.load()).c_str());
    }

    void unreachableUpstreamIs502() {
        m_doomed.stop(); // it listed doomed-model, then went away
        auto r = postJson(m_gatewayPort, "/v1/completions",
                          "{\"model\":\"doomed-model\",\"prompt\":\"x\",\"stream\":true}", gwAuth());
        QVERIFY(r);
        QCOMPARE(r->status, 502);
        const OJson j = parse(r->body);
        QVERIFY2(isErrorShape(j), r->body.c_str());
        QCOMPARE(j["error"]["code"].get<std::string>(), std::string("upstream_unreachable"));
        QVERIFY(j["error"]["message"].get<std::string>().find(std::to_string(m_doomed.port)) !=
                std::string::npos);
        auto plain = postJson(m_gatewayPort, "/v1/completions",
                              "{\"model\":\"doomed-model\",\"prompt\":\"x\"}", gwAuth());
        QVERIFY(plain);
        QCOMPARE(plain->status, 502);
    }
};

QTEST_GUILESS_MAIN(TestServerGateway)
#include "test_server_gateway.moc"
