// Tests of the HTTP server over real loopback connections with a fake engine: endpoints,
// streaming, cancel on disconnect, auth, Host check, CORS, limits (413/429/400), error shapes for
// a hostile corpus, metrics, and 64 concurrent streaming clients.
#include "../server/fake_server.h"
#include "../server/hostile_corpus.h"
#include "../server/http_test_support.h"
#include "test_support.h"

#include "hearth/server.h"
#include "server/progress_log.h"

#include <QtTest>

#include <mutex>

#include <atomic>
#include <thread>

using namespace hearth;
using namespace hearth::test;
using hearth::server::Server;
using hearth::server::RequestRecord;
using hearth::server::ServerConfig;

namespace {

const char* kChat = R"({"model":"fake","messages":[{"role":"user","content":"hi"}]})";


} // namespace

class TestServerHttp : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void healthIs503UntilAnEngineIsSet() {
        ServerConfig c;
        c.port = 0;
        c.log = [](const std::string&) {};
        Server s(c);
        QVERIFY(s.start().isOk());
        QVERIFY(s.port() > 0);
        auto cl = client(s.port());
        auto r = cl.Get("/health");
        QVERIFY(r);
        QCOMPARE(r->status, 503);
        auto chat = postJson(s.port(), "/v1/chat/completions", kChat);
        QCOMPARE(chat->status, 503);
        QVERIFY(isErrorShape(parse(chat->body)));
        s.setLoadError("bad file");
        QCOMPARE(cl.Get("/health")->status, 503);
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        std::shared_ptr<FakeEngine> e = FakeEngine::create(testDataPath("models/stories260K.gguf"));
        s.setEngine(e, "m");
        r = cl.Get("/health");
        QCOMPARE(r->status, 200);
        QCOMPARE(parse(r->body)["status"].get<std::string>(), std::string("ok"));
        s.stop();
        QVERIFY(!s.running());
    }

    void modelsList() {
        START_FAKE_SERVER(f);
        auto r = client(f.port).Get("/v1/models");
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["object"].get<std::string>(), std::string("list"));
        QCOMPARE(j["data"][0]["id"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(client(f.port).Get("/v1/models/fake-model")->status, 200);
        QCOMPARE(client(f.port).Get("/v1/models/nope")->status, 404);
    }

    void chatNonStreaming() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/chat/completions", kChat);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->get_header_value("Content-Type").find("application/json") == 0);
        OJson j = parse(r->body);
        QCOMPARE(j["object"].get<std::string>(), std::string("chat.completion"));
        QVERIFY(j["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
        QCOMPARE(j["model"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(j["choices"][0]["message"]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(),
                 std::string("Hello there, friend."));
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("stop"));
        QVERIFY(j["usage"]["prompt_tokens"].get<int>() > 0);
        QVERIFY(j["usage"]["completion_tokens"].get<int>() > 0);
        QVERIFY(j["usage"]["prompt_tokens_details"].contains("cached_tokens"));
        // The engine got the template's prompt and the sampling settings.
        auto sent = postJson(f.port, "/v1/chat/completions",
                             R"({"messages":[{"role":"user","content":"hi"}],"temperature":0.25, "top_p":0.5,"seed":9,"max_tokens":3,"presence_penalty":1})");
        QCOMPARE(sent->status, 200);
        GenerationRequest g = f.engine->lastRequest();
        QCOMPARE(g.sampling.temperature, 0.25f);
        QCOMPARE(g.sampling.topP, 0.5f);
        QCOMPARE(g.sampling.seed, uint64_t(9));
        QCOMPARE(g.sampling.presencePenalty, 1.0f);
        QCOMPARE(g.maxTokens, 3);
        QCOMPARE(parse(sent->body)["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
    }

    void chatStreaming() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"hi"}],"stream":true, "stream_options":{"include_usage":true}})");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->get_header_value("Content-Type").find("text/event-stream") == 0);
        auto data = sseData(r->body);
        QVERIFY(data.size() >= 4);
        QCOMPARE(data.back(), std::string("[DONE]"));
        OJson first = parse(data[0]);
        QCOMPARE(first["object"].get<std::string>(), std::string("chat.completion.chunk"));
        QCOMPARE(first["choices"][0]["delta"]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(streamedText(r->body), std::string("Hello there, friend."));
        OJson usage = parse(data[data.size() - 2]);
        QCOMPARE(usage["choices"].size(), size_t(0));
        QVERIFY(usage["usage"]["completion_tokens"].get<int>() > 0);
        OJson fin = parse(data[data.size() - 3]);
        QCOMPARE(fin["choices"][0]["finish_reason"].get<std::string>(), std::string("stop"));
    }

    void completionsAndN() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/completions", R"({"prompt":"Once upon","n":2,"max_tokens":50})");
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["object"].get<std::string>(), std::string("text_completion"));
        QCOMPARE(j["choices"].size(), size_t(2));
        QCOMPARE(j["choices"][1]["index"].get<int>(), 1);
        QCOMPARE(j["choices"][1]["text"].get<std::string>(), std::string("Hello there, friend."));
        auto s = postJson(f.port, "/v1/completions",
                          R"({"prompt":"Once upon","n":2,"stream":true,"echo":true})");
        QCOMPARE(s->status, 200);
        QCOMPARE(streamedText(s->body, 0), std::string("Once uponHello there, friend."));
        QCOMPARE(streamedText(s->body, 1), std::string("Once uponHello there, friend."));
        auto toks = postJson(f.port, "/v1/completions", R"({"prompt":[1,2,3],"max_tokens":2})");
        QCOMPARE(toks->status, 200);
        QCOMPARE(f.engine->lastRequest().prompt, (std::vector<int32_t>{1, 2, 3}));
    }

    void stopStringsAndLogprobs() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"hi"}],"stop":[","],"logprobs":true,"top_logprobs":2})");
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(), std::string("Hello there"));
        QCOMPARE(f.engine->lastRequest().stopStrings, std::vector<std::string>{","});
        const OJson& lp = j["choices"][0]["logprobs"]["content"];
        QVERIFY(lp.size() >= 2);
        QCOMPARE(lp[0]["top_logprobs"].size(), size_t(2));
        QVERIFY(lp[0]["bytes"].is_array());
        auto c = postJson(f.port, "/v1/completions", R"({"prompt":"x","logprobs":1,"max_tokens":3})");
        OJson cj = parse(c->body);
        QCOMPARE(cj["choices"][0]["logprobs"]["tokens"].size(), size_t(3));
        QCOMPARE(cj["choices"][0]["logprobs"]["top_logprobs"][0].size(), size_t(1));
    }

    void toolCalls() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
        const std::string body = R"({"messages":[{"role":"user","content":"weather?"}], "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]})";
        auto r = postJson(f.port, "/v1/chat/completions", body);
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("tool_calls"));
        const OJson& call = j["choices"][0]["message"]["tool_calls"][0];
        QCOMPARE(call["function"]["name"].get<std::string>(), std::string("get_weather"));
        QCOMPARE(call["function"]["arguments"].get<std::string>(), std::string("{\"city\":\"Paris\"}"));
        QVERIFY(call["id"].get<std::string>().rfind("call_", 0) == 0);
        auto s = postJson(f.port, "/v1/chat/completions",
                          body.substr(0, body.size() - 1) + R"(,"stream":true})");
        QCOMPARE(s->status, 200);
        bool sawCall = false, sawReason = false;
        for (const std::string& d : sseData(s->body)) {
            if (d == "[DONE]") continue;
            OJson c = parse(d);
            const OJson& ch = c["choices"][0];
            if (ch["delta"].contains("tool_calls")) {
                sawCall = true;
                QCOMPARE(ch["delta"]["tool_calls"][0]["index"].get<int>(), 0);
            }
            if (ch["finish_reason"].is_string())
                sawReason = ch["finish_reason"].get<std::string>() == "tool_calls";
        }
        QVERIFY(sawCall);
        QVERIFY(sawReason);
        QCOMPARE(streamedText(s->body), std::string(""));
        // Streamed as written: the name once, then the arguments in several fragments.
        int names = 0, fragments = 0;
        std::string args;
        for (const std::string& d : sseData(s->body)) {
            if (d == "[DONE]") continue;
            const OJson c = parse(d);
            const OJson& delta = c["choices"][0]["delta"];
            if (!delta.contains("tool_calls")) continue;
            const OJson& fn = delta["tool_calls"][0]["function"];
            if (fn.contains("name")) ++names;
            const std::string a = fn["arguments"].get<std::string>();
            fragments += !a.empty();
            args += a;
        }
        QCOMPARE(names, 1);
        QVERIFY2(fragments > 2, std::to_string(fragments).c_str());
        QCOMPARE(OJson::parse(args), OJson::parse("{\"city\": \"Paris\"}"));
    }

    // <think> text becomes reasoning_content, whole and streamed; reasoning_format none keeps it.
    void reasoningSplitsOff() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<think>plan it</think>\n\nThe answer.");
        const std::string body = R"({"messages":[{"role":"user","content":"q"}]})";
        auto r = postJson(f.port, "/v1/chat/completions", body);
        OJson j = parse(r->body);
        QCOMPARE(j["choices"][0]["message"]["reasoning_content"].get<std::string>(), std::string("plan it"));
        QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(), std::string("The answer."));
        auto s = postJson(f.port, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"q"}],"stream":true})");
        std::string reasoning;
        for (const std::string& d : sseData(s->body)) {
            if (d == "[DONE]") continue;
            const OJson delta = parse(d)["choices"][0]["delta"];
            if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
        }
        QCOMPARE(reasoning, std::string("plan it"));
        QCOMPARE(streamedText(s->body), std::string("The answer."));
        auto raw = postJson(f.port, "/v1/chat/completions",
                            R"({"messages":[{"role":"user","content":"q"}],"reasoning_format":"none"})");
        OJson k = parse(raw->body);
        QCOMPARE(k["choices"][0]["message"]["content"].get<std::string>(), std::string("<think>plan it</think>\n\nThe answer."));
        QVERIFY(!k["choices"][0]["message"].contains("reasoning_content"));
        // A template that opens the block itself (DeepSeek-R1): the output starts inside it.
        f.engine->setGenerationPrompt("assistant:<think>\n");
        f.engine->setReply("inside</think>out");
        OJson opened = parse(postJson(f.port, "/v1/chat/completions", body)->body);
        QCOMPARE(opened["choices"][0]["message"]["reasoning_content"].get<std::string>(), std::string("inside"));
        QCOMPARE(opened["choices"][0]["message"]["content"].get<std::string>(), std::string("out"));
    }

    // gpt-oss harmony output: analysis to reasoning_content, final to content, a commentary
    // message to functions.X to a tool call.
    void harmonyOverHttp() {
        START_FAKE_SERVER(f);
        f.engine->setGenerationPrompt("<|start|>assistant");
        f.engine->setReply("<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>Hi!");
        const std::string body = R"({"messages":[{"role":"user","content":"q"}]})";
        OJson j = parse(postJson(f.port, "/v1/chat/completions", body)->body);
        QCOMPARE(j["choices"][0]["message"]["reasoning_content"].get<std::string>(), std::string("think"));
        QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(), std::string("Hi!"));
        auto s = postJson(f.port, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"q"}],"stream":true})");
        QCOMPARE(streamedText(s->body), std::string("Hi!"));
        f.engine->setReply("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}");
        const std::string tools = R"({"messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]})";
        OJson c = parse(postJson(f.port, "/v1/chat/completions", tools)->body);
        QCOMPARE(c["choices"][0]["finish_reason"].get<std::string>(), std::string("tool_calls"));
        QCOMPARE(c["choices"][0]["message"]["tool_calls"][0]["function"]["name"].get<std::string>(), std::string("get_weather"));
        QCOMPARE(c["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>(),
                 std::string("{\"city\":\"Oslo\"}"));
        auto cs = postJson(f.port, "/v1/chat/completions", tools.substr(0, tools.size() - 1) + R"(,"stream":true})");
        bool named = false;
        std::string reason;
        for (const std::string& d : sseData(cs->body)) {
            if (d == "[DONE]") continue;
            const OJson ch = parse(d)["choices"][0];
            if (ch["delta"].contains("tool_calls") && ch["delta"]["tool_calls"][0]["function"].contains("name")) named = true;
            if (ch["finish_reason"].is_string()) reason = ch["finish_reason"].get<std::string>();
        }
        QVERIFY(named);
        QCOMPARE(reason, std::string("tool_calls"));
        // The other APIs read harmony the same way.
        f.engine->setReply("<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>Hi!");
        OJson a = parse(postJson(f.port, "/v1/messages",
                                 R"({"model":"m","max_tokens":400,"messages":[{"role":"user","content":"q"}]})")->body);
        QCOMPARE(a["content"][0]["type"].get<std::string>(), std::string("thinking"));
        QCOMPARE(a["content"][0]["thinking"].get<std::string>(), std::string("think"));
        QCOMPARE(a["content"][1]["text"].get<std::string>(), std::string("Hi!"));
        OJson o = parse(postJson(f.port, "/api/chat",
                                 R"({"model":"m","stream":false,"messages":[{"role":"user","content":"q"}]})")->body);
        QCOMPARE(o["message"]["content"].get<std::string>(), std::string("Hi!"));
        QCOMPARE(o["message"]["thinking"].get<std::string>(), std::string("think"));
        OJson rs = parse(postJson(f.port, "/v1/responses", R"({"model":"m","input":"q"})")->body);
        std::string outText;
        for (const OJson& item : rs["output"])
            if (item["type"] == "message") outText = item["content"][0]["text"].get<std::string>();
        QCOMPARE(outText, std::string("Hi!"));
    }

    void cancelOnDisconnect() {
        START_FAKE_SERVER(f, ServerConfig{}, 1 << 20);
        VERIFY_DISCONNECT_CANCELS(f, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":500000})", 2000, kChat);
    }

    void apiKey() {
        ServerConfig c;
        c.apiKey = "sekrit";
        START_FAKE_SERVER(f, c);
        auto none = postJson(f.port, "/v1/chat/completions", kChat);
        QCOMPARE(none->status, 401);
        QVERIFY(isErrorShape(parse(none->body)));
        QCOMPARE(parse(none->body)["error"]["code"].get<std::string>(), std::string("invalid_api_key"));
        QCOMPARE(postJson(f.port, "/v1/chat/completions", kChat, {{"Authorization", "Bearer wrong"}})->status, 401);
        QCOMPARE(postJson(f.port, "/v1/chat/completions", kChat, {{"Authorization", "Bearer sekrit"}})->status, 200);
        QCOMPARE(postJson(f.port, "/v1/chat/completions", kChat, {{"x-api-key", "sekrit"}})->status, 200);
        QCOMPARE(client(f.port).Get("/v1/models")->status, 401);
        QCOMPARE(client(f.port).Get("/health")->status, 200); // health stays open for probes
    }

    void hostHeaderCheck() {
        START_FAKE_SERVER(f);
        auto cl = client(f.port);
        QCOMPARE(cl.Get("/v1/models", {{"Host", "evil.example:80"}})->status, 403);
        QCOMPARE(cl.Get("/v1/models", {{"Host", "127.0.0.1.evil.example"}})->status, 403);
        auto bad = postJson(f.port, "/v1/chat/completions", kChat, {{"Host", "attacker.test"}});
        QCOMPARE(bad->status, 403);
        QVERIFY(isErrorShape(parse(bad->body)));
        QCOMPARE(cl.Get("/v1/models", {{"Host", "localhost:" + std::to_string(f.port)}})->status, 200);
        QCOMPARE(cl.Get("/v1/models", {{"Host", "[::1]"}})->status, 200);
    }

    void cors() {
        ServerConfig c;
        c.corsOrigins = {"http://app.local"};
        START_FAKE_SERVER(f, c);
        auto cl = client(f.port);
        auto ok = cl.Get("/v1/models", {{"Origin", "http://app.local"}});
        QCOMPARE(ok->get_header_value("Access-Control-Allow-Origin"), std::string("http://app.local"));
        auto other = cl.Get("/v1/models", {{"Origin", "http://evil.local"}});
        QVERIFY(!other->has_header("Access-Control-Allow-Origin"));
        auto pre = cl.Options("/v1/chat/completions", {{"Origin", "http://app.local"},
                                                       {"Access-Control-Request-Method", "POST"}});
        QCOMPARE(pre->status, 204);
        QVERIFY(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization") != std::string::npos);
        auto preBad = cl.Options("/v1/chat/completions", {{"Origin", "http://evil.local"}});
        QVERIFY(!preBad->has_header("Access-Control-Allow-Origin"));
    }

    void limits() {
        START_FAKE_SERVER(f);
        // 413 for a body over the limit.
        const std::string big = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(9u << 20, 'a') + "\"}]}";
        auto r = postJson(f.port, "/v1/chat/completions", big);
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        QVERIFY(isErrorShape(parse(r->body)));
        // 400 when prompt + max_tokens exceed the context.
        auto ctx = postJson(f.port, "/v1/chat/completions",
                            R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":100000})");
        QCOMPARE(ctx->status, 400);
        QCOMPARE(parse(ctx->body)["error"]["code"].get<std::string>(), std::string("context_length_exceeded"));
        // 429 with Retry-After when the engine is busy.
        f.engine->setMaxWaiting(0);
        auto busy = postJson(f.port, "/v1/chat/completions", kChat);
        QCOMPARE(busy->status, 429);
        QVERIFY(busy->has_header("Retry-After"));
        QVERIFY(isErrorShape(parse(busy->body)));
        f.engine->setMaxWaiting(1000);
        // 400 for a conversation the template refuses.
        auto tmpl = postJson(f.port, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"RAISE"}]})");
        QCOMPARE(tmpl->status, 400);
        QVERIFY(parse(tmpl->body)["error"]["message"].get<std::string>().find("alternate") != std::string::npos);
        // An engine error after submission.
        f.engine->setFailNext(invalidArgument("bad stop string"));
        QCOMPARE(postJson(f.port, "/v1/chat/completions", kChat)->status, 400);
        // Unknown paths and wrong methods.
        auto nf = client(f.port).Get("/v2/nothing");
        QCOMPARE(nf->status, 404);
        QVERIFY(isErrorShape(parse(nf->body)));
        auto wm = client(f.port).Get("/v1/chat/completions");
        QCOMPARE(wm->status, 405);
        QVERIFY(isErrorShape(parse(wm->body)));
        QCOMPARE(postJson(f.port, "/v1/models", "{}")->status, 405);
    }

    void hostileCorpusOverHttp() {
        START_FAKE_SERVER(f);
        const auto corpus = hostileBodies();
        int i = 0;
        for (const HostileBody& h : corpus) {
            auto r = postJson(f.port, h.chat ? "/v1/chat/completions" : "/v1/completions", h.body);
            const QString what = QStringLiteral("#%1: %2").arg(i++).arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(r, qPrintable(what));
            QVERIFY2(r->status >= 400 && r->status < 500, qPrintable(what + " -> " + QString::number(r->status)));
            QVERIFY2(isErrorShape(parse(r->body)), qPrintable(what));
        }
        QCOMPARE(f.engine->submitted(), 0);
        QCOMPARE(postJson(f.port, "/v1/chat/completions", kChat)->status, 200);
    }

    void tokenizeRoundTrip() {
        START_FAKE_SERVER(f);
        auto t = postJson(f.port, "/tokenize", R"({"content":"Once upon a time"})");
        QCOMPARE(t->status, 200);
        OJson tokens = parse(t->body)["tokens"];
        QVERIFY(tokens.size() >= 3);
        auto d = postJson(f.port, "/detokenize", OJson{{"tokens", tokens}}.dump());
        QCOMPARE(d->status, 200);
        QCOMPARE(parse(d->body)["content"].get<std::string>(), std::string("Once upon a time"));
        QCOMPARE(postJson(f.port, "/detokenize", R"({"tokens":[999999]})")->status, 400);
    }

    void metrics() {
        START_FAKE_SERVER(f);
        QCOMPARE(postJson(f.port, "/v1/chat/completions", kChat)->status, 200);
        QCOMPARE(postJson(f.port, "/v1/chat/completions", "{")->status, 400);
        QCOMPARE(client(f.port).Get("/nope")->status, 404);
        // Counted before the answer is sent: no waiting needed for the counters to show it.
        auto m = client(f.port).Get("/metrics");
        QCOMPARE(m->status, 200);
        const std::string& text = m->body;
        for (const char* needle :
             {"hearth_http_requests_total{path=\"/v1/chat/completions\",code=\"200\"} 1",
              "hearth_http_requests_total{path=\"/v1/chat/completions\",code=\"400\"} 1",
              "hearth_http_requests_total{path=\"other\",code=\"404\"} 1",
              "hearth_time_to_first_token_seconds_bucket", "hearth_time_per_output_token_seconds_count",
              "hearth_prompt_tokens_total", "hearth_generated_tokens_total", "hearth_requests_running",
              "hearth_requests_waiting", "hearth_kv_blocks_total 64", "hearth_prefix_cache_hit_rate 0.25"})
            QVERIFY2(text.find(needle) != std::string::npos, needle);
    }

    void concurrentStreams() {
        START_FAKE_SERVER(f);
        f.engine->setReply("one two three four five six seven eight");
        f.engine->setTokenDelay(std::chrono::milliseconds(1));
        constexpr int kClients = 64;
        std::atomic<int> good{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < kClients; ++i)
            threads.emplace_back([&, i] {
                auto r = postJson(f.port, "/v1/chat/completions",
                                  R"({"messages":[{"role":"user","content":"client )" + std::to_string(i) +
                                      R"("}],"stream":true})");
                if (r && r->status == 200 &&
                    streamedText(r->body) == "one two three four five six seven eight" &&
                    sseData(r->body).back() == "[DONE]")
                    ++good;
                else if (!r)
                    qWarning("client %d: %s", i, httplib::to_string(r.error()).c_str());
                else
                    qWarning("client %d: status %d: %s", i, r->status, r->body.substr(0, 300).c_str());
            });
        for (auto& t : threads) t.join();
        QCOMPARE(good.load(), kClients);
    }

    void requestLogHasOneLinePerRequest() {
        auto records = std::make_shared<std::vector<RequestRecord>>();
        auto mu = std::make_shared<std::mutex>();
        ServerConfig c;
        c.apiKey = "sekrit";
        c.requestLog = [records, mu](const RequestRecord& r) {
            std::lock_guard<std::mutex> lock(*mu);
            records->push_back(r);
        };
        START_FAKE_SERVER(f, c);
        f.engine->setReply("one two three");
        httplib::Client cl("127.0.0.1", f.port);
        cl.set_bearer_token_auth("sekrit");
        QCOMPARE(cl.Get("/v1/models")->status, 200);
        const std::string stream = R"({"messages":[{"role":"user","content":"hi"}],"stream":true})";
        QCOMPARE(cl.Post("/v1/chat/completions", stream, "application/json")->status, 200);
        httplib::Client anonymous("127.0.0.1", f.port);
        QCOMPARE(anonymous.Get("/v1/models")->status, 401);
        QCOMPARE(cl.Get("/nope")->status, 404);
        auto count = [&] {
            std::lock_guard<std::mutex> lock(*mu);
            return records->size();
        };
        QTRY_COMPARE_WITH_TIMEOUT(count(), size_t(4), 5000);
        std::lock_guard<std::mutex> lock(*mu);
        // The log is written when a response is finished, so a stream can be logged after a
        // later request on another connection: find each record by what it was.
        auto find = [&](const std::string& path, int status) -> const RequestRecord* {
            for (const auto& rec : *records)
                if (rec.path == path && rec.status == status) return &rec;
            return nullptr;
        };
        const RequestRecord* models = find("/v1/models", 200);
        const RequestRecord* chat = find("/v1/chat/completions", 200);
        QVERIFY(models && chat && find("/v1/models", 401) && find("/nope", 404));
        QCOMPARE(models->method, std::string("GET"));
        QVERIFY(!models->streamed && models->responseBytes > 0);
        QCOMPARE(models->remote, std::string("127.0.0.1"));
        QCOMPARE(chat->method, std::string("POST"));
        QVERIFY(chat->streamed);
        QCOMPARE(chat->requestBytes, stream.size());
        QVERIFY(chat->milliseconds > 0.0);
        const std::string line = hearth::server::formatRequestRecord(*chat);
        QVERIFY2(line.rfind("POST /v1/chat/completions 200 ", 0) == 0 && line.find(" ms stream 127.0.0.1") != std::string::npos,
                 line.c_str());
    }

    // A long request is not silent: the log says how far it is after 5 s and every 10 s after
    // (the prompt read so far, then the tokens written), whole responses and streams alike; and
    // the lines themselves, timed by hand.
    void longRequestsLogTheirProgress() {
        using hearth::server::ProgressLog;
        using Clock = ProgressLog::Clock;
        const Clock::time_point t0{};
        ProgressLog timed("POST /api/chat", t0);
        hearth::server::StreamProgress p;
        QCOMPARE(timed.due(p, t0 + std::chrono::seconds(4)), std::string());
        QCOMPARE(timed.due(p, t0 + std::chrono::seconds(5)), std::string("POST /api/chat · 5 s · waiting for the engine"));
        p.promptDone = 1024;
        p.promptTotal = 3210;
        QCOMPARE(timed.due(p, t0 + std::chrono::seconds(14)), std::string());
        QCOMPARE(timed.due(p, t0 + std::chrono::seconds(15)),
                 std::string("POST /api/chat · 15 s · reading the prompt: 1024 of 3210 tokens"));
        p.tokens = 1;
        QCOMPARE(timed.due(p, t0 + std::chrono::milliseconds(25500)), std::string("POST /api/chat · 25 s · 1 token written"));
        p.tokens = 87;
        QCOMPARE(timed.due(p, t0 + std::chrono::seconds(36)), std::string("POST /api/chat · 36 s · 87 tokens written"));

        auto lines = std::make_shared<std::vector<std::string>>();
        auto mu = std::make_shared<std::mutex>();
        ServerConfig c;
        c.log = [lines, mu](const std::string& line) {
            std::lock_guard<std::mutex> lock(*mu);
            lines->push_back(line);
        };
        START_FAKE_SERVER(f, c);
        f.engine->setReply("one two three");
        f.engine->setPromptSteps(60); // ~6 s of reading the prompt, then three tokens
        f.engine->setTokenDelay(std::chrono::milliseconds(100));
        auto said = [&](const std::string& start) {
            std::lock_guard<std::mutex> lock(*mu);
            for (const std::string& l : *lines)
                if (l.rfind(start, 0) == 0) return l;
            return std::string();
        };
        auto whole = postJson(f.port, "/v1/chat/completions", kChat);
        QVERIFY(whole);
        QCOMPARE(whole->status, 200);
        const std::string line = said("POST /v1/chat/completions · ");
        QVERIFY2(line.find(" s · reading the prompt: ") != std::string::npos && line.find(" tokens") != std::string::npos,
                 line.c_str());
        auto streamed = postJson(f.port, "/api/chat",
                                 R"({"model":"fake","messages":[{"role":"user","content":"hi"}],"stream":true})");
        QVERIFY(streamed);
        QCOMPARE(streamed->status, 200);
        QVERIFY2(said("POST /api/chat · ").find("reading the prompt") != std::string::npos, said("POST /api/chat").c_str());
    }

    void stopEndsOpenStreams() {
        START_FAKE_SERVER(f, ServerConfig{}, 1 << 20);
        f.engine->setReply("again ", true);
        f.engine->setTokenDelay(std::chrono::milliseconds(2));
        std::thread t([&] {
            postJson(f.port, "/v1/chat/completions",
                     R"({"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":500000})");
        });
        // A whole (not streamed) response waiting at the same time: cancelled too, and answered
        // 503 shutting_down if its connection is still there to answer on.
        int wholeStatus = 0;
        std::string wholeCode;
        std::thread w([&] {
            auto r = postJson(f.port, "/v1/chat/completions",
                              R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":500000})");
            if (!r) return;
            wholeStatus = r->status;
            wholeCode = parse(r->body)["error"].value("code", "");
        });
        QTRY_COMPARE_WITH_TIMEOUT(f.engine->live(), 2, 5000);
        f.server->stop();
        t.join();
        w.join();
        QTRY_COMPARE_WITH_TIMEOUT(f.engine->live(), 0, 5000);
        QCOMPARE(int(f.engine->cancelled().size()), 2);
        qInfo("whole response at the stop: %d", wholeStatus);
        if (wholeStatus != 0) {
            QCOMPARE(wholeStatus, 503);
            QCOMPARE(wholeCode, std::string("shutting_down"));
        }
    }
};

QTEST_GUILESS_MAIN(TestServerHttp)
#include "test_server_http.moc"
