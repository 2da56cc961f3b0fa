// Tests of the Ollama API: the body parsers field by field (types, ranges, defaults), then over
// real loopback HTTP with a fake engine: the NDJSON stream shape, done/done_reason, timings,
// options reaching the engine, tool calls with object arguments, a disconnect cancelling, the
// listings (tags, show, ps, version, /), errors in Ollama's shape, and a hostile corpus.
#include "../server/fake_server.h"
#include "../server/hostile_ollama.h"
#include "../server/http_test_support.h"
#include "test_support.h"

#include "hearth/grammar.h"
#include "hearth/server.h"
#include "server/ollama_api.h"

#include <QtTest>

#include <cmath>
#include <thread>

using namespace hearth;
using namespace hearth::test;
using hearth::server::Server;
using hearth::server::ServerConfig;
namespace hs = hearth::server;

namespace {


bool isOllamaError(const OJson& j) {
    return j.is_object() && j.size() == 1 && j.contains("error") && j["error"].is_string() &&
           !j["error"].get<std::string>().empty();
}

bool isRfc3339(const OJson& v) {
    if (!v.is_string()) return false;
    const std::string s = v.get<std::string>();
    return s.size() == 30 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
           s[19] == '.' && s.back() == 'Z';
}

bool hasTimings(const OJson& j) {
    for (const char* k : {"total_duration", "load_duration", "prompt_eval_count",
                          "prompt_eval_duration", "eval_count", "eval_duration"})
        if (!j.contains(k) || !j[k].is_number_integer() || j[k].get<int64_t>() < 0) return false;
    return j["total_duration"].get<int64_t>() > 0;
}

const char* kChat = R"({"model":"fake","messages":[{"role":"user","content":"hi"}]})";
const char* kGen = R"({"model":"fake","prompt":"hi"})";

} // namespace

class TestServerOllama : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // ---- parsing (no HTTP) ----

    void chatDefaultsAndEveryField() {
        auto d = hs::parseOllamaChatRequest(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", {});
        QVERIFY(d);
        const hs::OllamaParams& p = d->params;
        QVERIFY(p.common.stream); // streams by default
        QCOMPARE(p.common.temperature, 0.8f);
        QCOMPARE(p.common.topK, 40);
        QCOMPARE(p.common.topP, 0.9f);
        QCOMPARE(p.common.repeatPenalty, 1.1f);
        QCOMPARE(p.repeatLastN, 64);
        QVERIFY(!p.common.seed);
        QVERIFY(!p.numPredict);
        QVERIFY(p.format == hs::OllamaFormat::None);

        auto r = hs::parseOllamaChatRequest(R"({"model":"m:latest","stream":false,
            "messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi","images":[]},
                        {"role":"assistant","content":"","thinking":"hmm","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},
                        {"role":"tool","content":"42","tool_name":"f"}],
            "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
            "options":{"temperature":0,"top_k":5,"top_p":0.5,"min_p":0.1,"typical_p":0.7,"repeat_penalty":1.3,
                       "presence_penalty":0.5,"frequency_penalty":-0.5,"repeat_last_n":-1,"seed":7,"num_predict":12,
                       "stop":["\n\n","END"],"num_ctx":8192,"num_thread":4,"use_mmap":true,"unknown_thing":"x"},
            "format":"json","keep_alive":"10m","think":"high"})", {});
        QVERIFY2(r, r ? "" : r.error().message.c_str());
        const hs::OllamaParams& q = r->params;
        QCOMPARE(q.common.model, std::string("m:latest"));
        QVERIFY(!q.common.stream);
        QCOMPARE(q.common.temperature, 0.0f);
        QCOMPARE(q.common.topK, 5);
        QCOMPARE(q.common.topP, 0.5f);
        QCOMPARE(q.common.minP, 0.1f);
        QCOMPARE(q.common.typicalP, 0.7f);
        QCOMPARE(q.common.repeatPenalty, 1.3f);
        QCOMPARE(q.common.presencePenalty, 0.5f);
        QCOMPARE(q.common.frequencyPenalty, -0.5f);
        QCOMPARE(q.repeatLastN, -1);
        QCOMPARE(*q.common.seed, uint64_t(7));
        QCOMPARE(*q.numPredict, 12);
        QCOMPARE(q.common.stop.size(), size_t(2));
        QVERIFY(q.format == hs::OllamaFormat::Json);
        QCOMPARE(*q.keepAliveSeconds, 600.0);
        QVERIFY(q.think && *q.think);
        QCOMPARE(q.thinkLevel, std::string("high"));
        QCOMPARE(r->messages.size(), size_t(4));
        QCOMPARE(r->messages[2]["tool_calls"][0]["function"]["arguments"]["a"].get<int>(), 1);
        QCOMPARE(r->messages[2]["reasoning_content"].get<std::string>(), std::string("hmm"));
        QCOMPARE(r->messages[3]["name"].get<std::string>(), std::string("f"));
        QCOMPARE(r->tools.size(), size_t(1));
        QVERIFY(r->toolsJson.is_array());

        // Schema formats are kept; num_predict <= 0 means no cap; a negative seed is random.
        auto s = hs::parseOllamaChatRequest(R"({"messages":[],"format":{"type":"object"},
            "options":{"num_predict":-1,"seed":-1,"top_k":0,"repeat_penalty":0}})", {});
        QVERIFY(s);
        QVERIFY(s->params.format == hs::OllamaFormat::Schema);
        QCOMPARE(s->params.schema["type"].get<std::string>(), std::string("object"));
        QVERIFY(!s->params.numPredict);
        QVERIFY(!s->params.common.seed);
        QCOMPARE(s->params.common.topK, 0);
        QCOMPARE(s->params.common.repeatPenalty, 1.0f);
        QVERIFY(s->messages.empty()); // a load request
        QVERIFY(hs::parseOllamaChatRequest(R"({"format":""})", {})->params.format == hs::OllamaFormat::None);
        QVERIFY(*hs::parseOllamaChatRequest(R"({"think":false})", {})->params.think == false);
    }

    void generateFields() {
        auto r = hs::parseOllamaGenerateRequest(R"({"model":"m","prompt":"Once","system":"sys","raw":false,
            "context":[1,2,3],"images":null,"template":"","suffix":"","keep_alive":-1})", {});
        QVERIFY2(r, r ? "" : r.error().message.c_str());
        QCOMPARE(r->prompt, std::string("Once"));
        QCOMPARE(r->system, std::string("sys"));
        QVERIFY(!r->raw);
        QCOMPARE(r->context, (std::vector<int32_t>{1, 2, 3}));
        QCOMPARE(*r->params.keepAliveSeconds, -1.0);
        auto raw = hs::parseOllamaGenerateRequest(R"({"prompt":"x","raw":true})", {});
        QVERIFY(raw && raw->raw);
        auto t = hs::parseOllamaGenerateRequest(R"({"prompt":"x","template":"{{ .Prompt }}"})", {});
        QVERIFY(!t);
        QCOMPARE(t.error().status, 400);
        QVERIFY(t.error().message.find("template") != std::string::npos);
        // A generate request's images are decoded from base64 (the model checks them later).
        auto img = hs::parseOllamaGenerateRequest(R"({"prompt":"x","images":["aGk="]})", {});
        QVERIFY(img);
        QCOMPARE(img->images, (std::vector<std::string>{"hi"}));
        auto notBase64 = hs::parseOllamaGenerateRequest(R"({"prompt":"x","images":["*"]})", {});
        QVERIFY(!notBase64);
        QCOMPARE(notBase64.error().param, std::string("images[0]"));
        auto show = hs::parseOllamaShowRequest(R"({"name":"old-client"})", {});
        QVERIFY(show);
        QCOMPARE(show->model, std::string("old-client"));
        QVERIFY(!hs::parseOllamaShowRequest("{}", {}));
    }

    void badFieldsName() {
        struct Case {
            const char* body;
            const char* names;
        } cases[] = {
            {R"({"options":{"temperature":"hot"}})", "options.temperature"},
            {R"({"options":{"top_p":2}})", "options.top_p"},
            {R"({"options":{"top_k":1.5}})", "options.top_k"},
            {R"({"options":{"num_predict":-7}})", "options.num_predict"},
            {R"({"options":{"stop":[1]}})", "options.stop[0]"},
            {R"({"options":{"num_ctx":"big"}})", "options.num_ctx"},
            {R"({"options":5})", "options"},
            {R"({"format":"xml"})", "format"},
            {R"({"think":"yes"})", "think"},
            {R"({"keep_alive":"forever"})", "keep_alive"},
            {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
            {R"({"messages":[{"role":"user","content":"x","images":["a"]}]})", "messages[0].images"},
            {R"({"tools":[{"type":"function","function":{}}]})", "tools[0].function.name"},
        };
        for (const Case& c : cases) {
            auto r = hs::parseOllamaChatRequest(c.body, {});
            QVERIFY2(!r, c.body);
            QVERIFY2(r.error().status == 400, c.body);
            QVERIFY2(r.error().message.find(c.names) != std::string::npos,
                     (std::string(c.body) + " -> " + r.error().message).c_str());
        }
    }

    void keepAliveDurations() {
        QCOMPARE(*hs::parseKeepAlive("5m"), 300.0);
        QCOMPARE(*hs::parseKeepAlive("1h30m"), 5400.0);
        QCOMPARE(*hs::parseKeepAlive("-1"), -1.0);
        QCOMPARE(*hs::parseKeepAlive("-1m"), -60.0);
        QCOMPARE(*hs::parseKeepAlive("0"), 0.0);
        QCOMPARE(*hs::parseKeepAlive("300"), 300.0);
        QCOMPARE(*hs::parseKeepAlive("1.5s"), 1.5);
        QCOMPARE(*hs::parseKeepAlive("250ms"), 0.25);
        for (const char* bad : {"", "m", "5", "5 m", "5d", "forever", "1.2.3s", "-", "5mm", "s5"})
            if (std::string(bad) != "5") QVERIFY2(!hs::parseKeepAlive(bad), bad);
    }

    // ---- over HTTP ----

    void rootVersionTagsPsShow() {
        START_FAKE_SERVER(f);
        auto cl = client(f.port);
        auto root = cl.Get("/");
        QCOMPARE(root->status, 200);
        QCOMPARE(root->body, std::string("Ollama is running"));
        auto head = cl.Head("/");
        QVERIFY(head);
        QCOMPARE(head->status, 200);
        QVERIFY(head->body.empty());
        QCOMPARE(parse(cl.Get("/api/version")->body)["version"].get<std::string>(),
                 std::string(hs::kOllamaApiVersion));
        OJson tags = parse(cl.Get("/api/tags")->body);
        QCOMPARE(tags["models"].size(), size_t(1));
        QCOMPARE(tags["models"][0]["name"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(tags["models"][0]["digest"].get<std::string>().size(), size_t(64));
        QVERIFY(isRfc3339(tags["models"][0]["modified_at"]));
        QCOMPARE(tags["models"][0]["details"]["format"].get<std::string>(), std::string("gguf"));
        OJson ps = parse(cl.Get("/api/ps")->body);
        QCOMPARE(ps["models"][0]["model"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(ps["models"][0]["context_length"].get<int>(), 512);
        auto show = postJson(f.port, "/api/show", R"({"model":"fake-model:latest"})");
        QCOMPARE(show->status, 200);
        OJson s = parse(show->body);
        QCOMPARE(s["details"]["family"].get<std::string>(), std::string("fake"));
        QCOMPARE(s["model_info"]["fake.context_length"].get<int>(), 512);
        QVERIFY(s["capabilities"].is_array());
        // One model: any name maps to it, as on the OpenAI side.
        QCOMPARE(postJson(f.port, "/api/show", R"({"model":"llama3"})")->status, 200);
    }

    void generateStreamsNdjson() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/api/generate", kGen);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->get_header_value("Content-Type").find("application/x-ndjson") == 0);
        auto lines = ndjson(r->body);
        QVERIFY(lines.size() >= 3);
        std::string text;
        for (size_t i = 0; i + 1 < lines.size(); ++i) {
            const OJson& l = lines[i];
            QVERIFY(l.is_object());
            QCOMPARE(l["model"].get<std::string>(), std::string("fake"));
            QVERIFY(isRfc3339(l["created_at"]));
            QCOMPARE(l["done"].get<bool>(), false);
            QVERIFY(!l.contains("done_reason"));
            text += l["response"].get<std::string>();
        }
        QCOMPARE(text, std::string("Hello there, friend."));
        const OJson& last = lines.back();
        QCOMPARE(last["done"].get<bool>(), true);
        QCOMPARE(last["response"].get<std::string>(), std::string(""));
        QCOMPARE(last["done_reason"].get<std::string>(), std::string("stop"));
        QVERIFY(hasTimings(last));
        QCOMPARE(last["eval_count"].get<int>(), int(lines.size() - 1));
        QCOMPARE(last["eval_duration"].get<int64_t>(), int64_t(2000000)); // the fake's 2 ms
        QVERIFY(last["context"].is_array());
        QCOMPARE(last["context"].size(), size_t(last["prompt_eval_count"].get<int>() + last["eval_count"].get<int>()));
        // The chat template wrapped the prompt (the fake renders "role: content").
        const std::string rendered =
            *f.engine->tokenizer().decode(f.engine->lastRequest().prompt);
        QVERIFY2(rendered.find("user: hi") != std::string::npos, rendered.c_str());
    }

    void generateWholeRawAndContext() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/api/generate",
                          R"({"model":"fake","prompt":"hi","stream":false,"options":{"num_predict":3}})");
        QCOMPARE(r->status, 200);
        QVERIFY(r->get_header_value("Content-Type").find("application/json") == 0);
        OJson j = parse(r->body);
        QCOMPARE(j["done"].get<bool>(), true);
        QCOMPARE(j["done_reason"].get<std::string>(), std::string("length"));
        QCOMPARE(j["eval_count"].get<int>(), 3);
        QCOMPARE(f.engine->lastRequest().maxTokens, 3);
        QVERIFY(hasTimings(j));
        // raw: the prompt as is (BOS + its tokens), no template.
        auto raw = postJson(f.port, "/api/generate", R"({"prompt":"Once upon","raw":true,"stream":false})");
        QCOMPARE(raw->status, 200);
        const std::vector<int32_t> sent = f.engine->lastRequest().prompt;
        QCOMPARE(sent, *f.engine->tokenizer().encode("Once upon", true, true));
        // The returned context continues a conversation: sent first next time.
        OJson ctx = parse(raw->body)["context"];
        OJson next = {{"prompt", " time"}, {"raw", true}, {"stream", false}, {"context", ctx}};
        QCOMPARE(postJson(f.port, "/api/generate", next.dump())->status, 200);
        const std::vector<int32_t> cont = f.engine->lastRequest().prompt;
        QCOMPARE(cont.size(), ctx.size() + f.engine->tokenizer().encode(" time", false, true)->size());
        for (size_t i = 0; i < ctx.size(); ++i) QCOMPARE(cont[i], ctx[i].get<int32_t>());
        // num_predict beyond the context is clamped to the room left, not refused.
        auto big = postJson(f.port, "/api/generate",
                            R"({"prompt":"hi","stream":false,"options":{"num_predict":100000}})");
        QCOMPARE(big->status, 200);
        QVERIFY(f.engine->lastRequest().maxTokens < 512);
        // An empty prompt loads the model and answers at once.
        auto load = postJson(f.port, "/api/generate", R"({"model":"fake"})");
        QCOMPARE(load->status, 200);
        QCOMPARE(parse(load->body)["done_reason"].get<std::string>(), std::string("load"));
    }

    void chatWholeAndStreamed() {
        START_FAKE_SERVER(f);
        const int before = f.engine->submitted();
        auto load = postJson(f.port, "/api/chat", R"({"model":"fake","messages":[]})");
        QCOMPARE(load->status, 200);
        QCOMPARE(parse(load->body)["done_reason"].get<std::string>(), std::string("load"));
        QCOMPARE(f.engine->submitted(), before);

        auto r = postJson(f.port, "/api/chat", R"({"model":"fake","stream":false,"messages":[{"role":"user","content":"hi"}]})");
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["message"]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(j["message"]["content"].get<std::string>(), std::string("Hello there, friend."));
        QCOMPARE(j["done"].get<bool>(), true);
        QCOMPARE(j["done_reason"].get<std::string>(), std::string("stop"));
        QVERIFY(!j.contains("context"));
        QVERIFY(hasTimings(j));

        auto s = postJson(f.port, "/api/chat", kChat);
        QCOMPARE(s->status, 200);
        auto lines = ndjson(s->body);
        QVERIFY(lines.size() >= 3);
        std::string text;
        for (size_t i = 0; i + 1 < lines.size(); ++i) {
            QCOMPARE(lines[i]["done"].get<bool>(), false);
            QCOMPARE(lines[i]["message"]["role"].get<std::string>(), std::string("assistant"));
            text += lines[i]["message"]["content"].get<std::string>();
        }
        QCOMPARE(text, std::string("Hello there, friend."));
        QCOMPARE(lines.back()["done"].get<bool>(), true);
        QCOMPARE(lines.back()["message"]["content"].get<std::string>(), std::string(""));
        QVERIFY(hasTimings(lines.back()));
    }

    void optionsReachTheEngine() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/api/chat", R"({"stream":false,"messages":[{"role":"user","content":"hi"}],
            "options":{"temperature":0.25,"top_k":7,"top_p":0.5,"min_p":0.05,"typical_p":0.9,"repeat_penalty":1.2,
                       "presence_penalty":1,"frequency_penalty":0.5,"repeat_last_n":32,"seed":9,"num_predict":4,
                       "stop":["there"],"num_ctx":99999}})");
        QCOMPARE(r->status, 200);
        GenerationRequest g = f.engine->lastRequest();
        QCOMPARE(g.sampling.temperature, 0.25f);
        QCOMPARE(g.sampling.topK, 7);
        QCOMPARE(g.sampling.topP, 0.5f);
        QCOMPARE(g.sampling.minP, 0.05f);
        QCOMPARE(g.sampling.typicalP, 0.9f);
        QCOMPARE(g.sampling.repetitionPenalty, 1.2f);
        QCOMPARE(g.sampling.presencePenalty, 1.0f);
        QCOMPARE(g.sampling.frequencyPenalty, 0.5f);
        QCOMPARE(g.sampling.penaltyLastN, 32);
        QCOMPARE(g.sampling.seed, uint64_t(9));
        QCOMPARE(g.maxTokens, 4);
        QCOMPARE(g.stopStrings, std::vector<std::string>{"there"});
        QCOMPARE(parse(r->body)["message"]["content"].get<std::string>(), std::string("Hello "));
        // Ollama's defaults when nothing is set.
        QCOMPARE(postJson(f.port, "/api/generate", R"({"prompt":"hi","stream":false})")->status, 200);
        g = f.engine->lastRequest();
        QCOMPARE(g.sampling.temperature, 0.8f);
        QCOMPARE(g.sampling.topK, 40);
        QCOMPARE(g.sampling.topP, 0.9f);
        QCOMPARE(g.sampling.repetitionPenalty, 1.1f);
        QCOMPARE(g.sampling.penaltyLastN, 64);
        QCOMPARE(g.n, 1);
    }

    void formatBuildsAGrammar() {
        START_FAKE_SERVER(f);
        using grammar::TextMatch;
        QCOMPARE(postJson(f.port, "/api/generate", R"({"prompt":"hi","stream":false})")->status, 200);
        QVERIFY(!f.engine->lastRequest().grammar); // free text without a format
        auto json = postJson(f.port, "/api/generate", R"({"prompt":"hi","stream":false,"format":"json"})");
        QCOMPARE(json->status, 200);
        auto g = f.engine->lastRequest().grammar;
        QVERIFY(g);
        QVERIFY(grammar::matchText(*g, R"({"a":[1,2,{"b":null}]})") == TextMatch::Complete);
        QVERIFY(grammar::matchText(*g, "Hello") == TextMatch::Rejected);
        QVERIFY(grammar::matchText(*g, "[1]") == TextMatch::Rejected); // an object, not any JSON

        auto schema = postJson(f.port, "/api/chat", R"({"stream":false,"messages":[{"role":"user","content":"hi"}],
            "format":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
                      "required":["name","age"],"additionalProperties":false}})");
        QCOMPARE(schema->status, 200);
        g = f.engine->lastRequest().grammar;
        QVERIFY(g);
        QVERIFY(grammar::matchText(*g, R"({"name":"Ada","age":36})") == TextMatch::Complete);
        QVERIFY(grammar::matchText(*g, R"({"name":"Ada","age":"old"})") == TextMatch::Rejected);
        QVERIFY(grammar::matchText(*g, R"({"age":36})") == TextMatch::Rejected);

        // A keyword no grammar enforces is left out (as llama.cpp does): the rest still holds.
        auto loose = postJson(f.port, "/api/chat", R"({"stream":false,"messages":[{"role":"user","content":"hi"}],
            "format":{"type":"object","properties":{"age":{"type":"integer","multipleOf":3}},"required":["age"]}})");
        QCOMPARE(loose->status, 200);
        QVERIFY(grammar::matchText(*f.engine->lastRequest().grammar, R"({"age":4})") == TextMatch::Complete);
        QVERIFY(grammar::matchText(*f.engine->lastRequest().grammar, R"({"age":"4"})") == TextMatch::Rejected);
        // A schema the compiler cannot honour: 400 naming the part, nothing submitted.
        const int before = f.engine->submitted();
        auto bad = postJson(f.port, "/api/chat", R"({"messages":[{"role":"user","content":"hi"}],
            "format":{"type":"object","properties":{"age":{"$dynamicRef":"meta"}}}})");
        QCOMPARE(bad->status, 400);
        OJson j = parse(bad->body);
        QVERIFY(isOllamaError(j));
        QVERIFY2(j["error"].get<std::string>().find("/properties/age/$dynamicRef") != std::string::npos,
                 j["error"].get<std::string>().c_str());
        QVERIFY(j["error"].get<std::string>().rfind("'format'", 0) == 0);
        QCOMPARE(f.engine->submitted(), before);
    }

    void toolCallsHaveObjectArguments() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
        const std::string body = R"({"messages":[{"role":"user","content":"weather?"}],"stream":false,
            "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]})";
        auto r = postJson(f.port, "/api/chat", body);
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        const OJson& call = j["message"]["tool_calls"][0];
        QCOMPARE(call["function"]["name"].get<std::string>(), std::string("get_weather"));
        QVERIFY(call["function"]["arguments"].is_object());
        QCOMPARE(call["function"]["arguments"]["city"].get<std::string>(), std::string("Paris"));
        QCOMPARE(call["function"]["index"].get<int>(), 0);
        QCOMPARE(j["message"]["content"].get<std::string>(), std::string(""));
        QCOMPARE(j["done_reason"].get<std::string>(), std::string("stop"));
        // The template saw the tools (the fake renders "tools: N").
        QVERIFY(f.engine->tokenizer().decode(f.engine->lastRequest().prompt)->find("tools: 1") != std::string::npos);

        std::string streamed = body;
        streamed.replace(streamed.find("\"stream\":false"), 14, "\"stream\":true");
        auto s = postJson(f.port, "/api/chat", streamed);
        QCOMPARE(s->status, 200);
        bool sawCall = false;
        std::string text;
        for (const OJson& l : ndjson(s->body)) {
            if (l["message"].contains("tool_calls")) {
                sawCall = true;
                QVERIFY(l["message"]["tool_calls"][0]["function"]["arguments"].is_object());
            }
            text += l["message"]["content"].get<std::string>();
        }
        QVERIFY(sawCall);
        QCOMPARE(text, std::string("")); // the call's text is not streamed as content

        // Without tools the same text is plain content.
        auto plain = postJson(f.port, "/api/chat", R"({"stream":false,"messages":[{"role":"user","content":"x"}]})");
        QVERIFY(!parse(plain->body)["message"].contains("tool_calls"));
    }

    void thinkSplitsTheReasoning() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<think>pondering deeply</think>The answer.");
        const std::string chatBody = R"({"stream":false,"think":true,"messages":[{"role":"user","content":"why?"}]})";
        OJson j = parse(postJson(f.port, "/api/chat", chatBody)->body);
        QCOMPARE(j["message"]["thinking"].get<std::string>(), std::string("pondering deeply"));
        QCOMPARE(j["message"]["content"].get<std::string>(), std::string("The answer."));
        // Streamed: thinking parts first, then content parts.
        std::string streamedBody = chatBody;
        streamedBody.replace(streamedBody.find("\"stream\":false"), 14, "\"stream\":true");
        std::string thinking, content;
        for (const OJson& l : ndjson(postJson(f.port, "/api/chat", streamedBody)->body)) {
            if (l["message"].contains("thinking")) {
                QVERIFY(content.empty());
                thinking += l["message"]["thinking"].get<std::string>();
            }
            content += l["message"]["content"].get<std::string>();
        }
        QCOMPARE(thinking, std::string("pondering deeply"));
        QCOMPARE(content, std::string("The answer."));
        // /api/generate puts it in "thinking".
        OJson g = parse(postJson(f.port, "/api/generate", R"({"prompt":"why?","think":"high","stream":false})")->body);
        QCOMPARE(g["thinking"].get<std::string>(), std::string("pondering deeply"));
        QCOMPARE(g["response"].get<std::string>(), std::string("The answer."));
        // Without think the text stays as the model wrote it.
        OJson plain = parse(postJson(f.port, "/api/chat", R"({"stream":false,"messages":[{"role":"user","content":"why?"}]})")->body);
        QVERIFY(!plain["message"].contains("thinking"));
        QCOMPARE(plain["message"]["content"].get<std::string>(), std::string("<think>pondering deeply</think>The answer."));
    }

    void disconnectCancels() {
        START_FAKE_SERVER(f, ServerConfig{}, 1 << 20);
        VERIFY_DISCONNECT_CANCELS(f, "/api/generate", R"({"prompt":"hi","options":{"num_predict":500000}})", 4000, kGen);
    }

    void streamedEngineErrorIsAnErrorLine() {
        START_FAKE_SERVER(f);
        f.engine->setFailNext(internalError("the device fell over"));
        auto s = postJson(f.port, "/api/generate", kGen);
        QCOMPARE(s->status, 200); // the stream had begun
        auto lines = ndjson(s->body);
        QVERIFY(!lines.empty());
        QVERIFY(isOllamaError(lines.back()));
        f.engine->setFailNext(internalError("again"));
        auto w = postJson(f.port, "/api/generate", R"({"prompt":"hi","stream":false})");
        QCOMPARE(w->status, 500);
        QVERIFY(isOllamaError(parse(w->body)));
    }

    void errorsHaveOllamasShape() {
        ServerConfig c;
        c.apiKey = "k";
        START_FAKE_SERVER(f, c);
        auto noKey = postJson(f.port, "/api/chat", kChat);
        QCOMPARE(noKey->status, 401);
        QVERIFY(isOllamaError(parse(noKey->body)));
        httplib::Headers auth = {{"Authorization", "Bearer k"}};
        QCOMPARE(postJson(f.port, "/api/chat", R"({"stream":false,"messages":[{"role":"user","content":"hi"}]})", auth)->status, 200);
        auto cl = client(f.port);
        cl.set_default_headers(auth);
        auto unknown = cl.Get("/api/nope");
        QCOMPARE(unknown->status, 404);
        QVERIFY(isOllamaError(parse(unknown->body)));
        auto wrongMethod = cl.Get("/api/chat");
        QCOMPARE(wrongMethod->status, 405);
        QVERIFY(isOllamaError(parse(wrongMethod->body)));
        auto embed = cl.Post("/api/embed", R"({"model":"m","input":"hi"})", "application/json");
        QCOMPARE(embed->status, 200); // embeddings themselves: test_server_embeddings
        QCOMPARE(parse(embed->body)["embeddings"].size(), size_t(1));
        auto pull = cl.Post("/api/pull", R"({"model":"llama3"})", "application/json");
        QCOMPARE(pull->status, 501);
        QVERIFY(isOllamaError(parse(pull->body)));
        // The OpenAI side keeps its own shape.
        auto openai = cl.Get("/v1/nope");
        QVERIFY(isErrorShape(parse(openai->body)));
        // /metrics labels the Ollama routes.
        const std::string metrics = cl.Get("/metrics")->body;
        QVERIFY(metrics.find("/api/chat") != std::string::npos);
    }

    void hostileCorpusOverHttp() {
        START_FAKE_SERVER(f);
        const auto corpus = hostileOllamaBodies();
        QVERIFY(corpus.size() > 300);
        int i = 0;
        for (const HostileOllamaBody& h : corpus) {
            auto r = postJson(f.port, h.path, h.body);
            const QString what = QStringLiteral("#%1 %2: %3").arg(i++).arg(QString::fromStdString(h.path))
                                     .arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(r, qPrintable(what));
            QVERIFY2(r->status >= 400 && r->status < 500, qPrintable(what + " -> " + QString::number(r->status)));
            QVERIFY2(isOllamaError(parse(r->body)), qPrintable(what + " -> " + QString::fromStdString(r->body.substr(0, 200))));
        }
        QCOMPARE(f.engine->submitted(), 0);
        // Negative control: the valid bodies the corpus builds on are accepted.
        QCOMPARE(postJson(f.port, "/api/chat", R"({"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]})")->status, 200);
        QCOMPARE(postJson(f.port, "/api/generate", R"({"model":"m","stream":false,"prompt":"hi"})")->status, 200);
        QCOMPARE(postJson(f.port, "/api/show", R"({"model":"m"})")->status, 200);
    }
};

QTEST_GUILESS_MAIN(TestServerOllama)
#include "test_server_ollama.moc"
