// One request through every API dialect: OpenAI chat, Ollama /api/chat, Anthropic /v1/messages
// and OpenAI /v1/responses, whole and streamed, give the same tokens, the same finish reason
// (cut by the limit, ended by a stop string, whose string Anthropic names) and, from a scripted
// reply holding a tool call, the same call, since one generation driver serves them all.
#include "../server/fake_server.h"
#include "../server/http_test_support.h"
#include "../server/model_server.h"
#include "../server/new_api_test_support.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/server.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::test;

namespace {

// What a dialect's reply says, in common terms.
struct DialectReply {
    std::string text;
    std::string finish;       // the dialect's own word
    int promptTokens = -1;
    int completionTokens = -1;
    std::string stopSequence; // Anthropic's stop_sequence
    std::vector<std::pair<std::string, OJson>> calls; // name, arguments as an object
};

std::string dialectRequest(const std::string& dialect, int maxTokens, const std::string& stop, bool stream,
                           const std::string& tools = {}) {
    const std::string user = R"({"role":"user","content":"Tell me a story"})";
    const std::string s = stream ? "true" : "false";
    if (dialect == "openai")
        return R"({"model":"m","temperature":0,"max_tokens":)" + std::to_string(maxTokens) + R"(,"stream":)" + s +
               (stream ? R"(,"stream_options":{"include_usage":true})" : "") +
               (stop.empty() ? "" : R"(,"stop":[")" + stop + R"("])") + R"(,"messages":[)" + user + "]" +
               (tools.empty() ? "" : "," + tools) + "}";
    if (dialect == "ollama")
        return R"({"model":"m","stream":)" + s + R"(,"options":{"temperature":0,"repeat_penalty":1.0,"num_predict":)" +
               std::to_string(maxTokens) + (stop.empty() ? "" : R"(,"stop":[")" + stop + R"("])") +
               R"(},"messages":[)" + user + "]" + (tools.empty() ? "" : "," + tools) + "}";
    if (dialect == "anthropic")
        return R"({"model":"m","temperature":0,"max_tokens":)" + std::to_string(maxTokens) + R"(,"stream":)" + s +
               (stop.empty() ? "" : R"(,"stop_sequences":[")" + stop + R"("])") + R"(,"messages":[)" + user + "]" +
               (tools.empty() ? "" : "," + tools) + "}";
    return R"({"model":"m","temperature":0,"max_output_tokens":)" + std::to_string(maxTokens) + R"(,"stream":)" + s +
           R"(,"input":[)" + user + "]" + (tools.empty() ? "" : "," + tools) + "}";
}

const char* dialectPath(const std::string& dialect) {
    if (dialect == "openai") return "/v1/chat/completions";
    if (dialect == "ollama") return "/api/chat";
    if (dialect == "anthropic") return "/v1/messages";
    return "/v1/responses";
}

OJson argumentsObject(const OJson& args) { return args.is_string() ? parse(args.get<std::string>()) : args; }

DialectReply readOpenAi(const std::string& body, bool stream) {
    DialectReply r;
    if (!stream) {
        OJson j = parse(body);
        OJson& c = j["choices"][0];
        r.text = c["message"]["content"].is_string() ? c["message"]["content"].get<std::string>() : "";
        r.finish = c["finish_reason"].get<std::string>();
        r.promptTokens = j["usage"]["prompt_tokens"].get<int>();
        r.completionTokens = j["usage"]["completion_tokens"].get<int>();
        if (c["message"].contains("tool_calls"))
            for (const OJson& t : c["message"]["tool_calls"])
                r.calls.emplace_back(t["function"]["name"].get<std::string>(), argumentsObject(t["function"]["arguments"]));
        return r;
    }
    std::string args;
    for (const std::string& d : sseData(body)) {
        if (d == "[DONE]") continue;
        OJson chunk = parse(d);
        if (chunk.contains("usage") && chunk["usage"].is_object()) {
            r.promptTokens = chunk["usage"]["prompt_tokens"].get<int>();
            r.completionTokens = chunk["usage"]["completion_tokens"].get<int>();
        }
        if (chunk["choices"].empty()) continue;
        OJson& c = chunk["choices"][0];
        if (c["delta"].contains("content") && c["delta"]["content"].is_string())
            r.text += c["delta"]["content"].get<std::string>();
        if (c["delta"].contains("tool_calls"))
            for (const OJson& t : c["delta"]["tool_calls"]) {
                if (t["function"].contains("name")) r.calls.emplace_back(t["function"]["name"].get<std::string>(), nullptr);
                if (t["function"].contains("arguments")) args += t["function"]["arguments"].get<std::string>();
            }
        if (c["finish_reason"].is_string()) r.finish = c["finish_reason"].get<std::string>();
    }
    if (!r.calls.empty()) r.calls.back().second = parse(args);
    return r;
}

DialectReply readOllama(const std::string& body, bool stream) {
    DialectReply r;
    const std::vector<OJson> lines = stream ? ndjson(body) : std::vector<OJson>{parse(body)};
    for (const OJson& j : lines) {
        const OJson& m = j["message"];
        if (m.contains("content")) r.text += m["content"].get<std::string>();
        if (m.contains("tool_calls"))
            for (const OJson& t : m["tool_calls"])
                r.calls.emplace_back(t["function"]["name"].get<std::string>(), t["function"]["arguments"]);
        if (j.value("done", false)) {
            r.finish = j["done_reason"].get<std::string>();
            r.promptTokens = j["prompt_eval_count"].get<int>();
            r.completionTokens = j["eval_count"].get<int>();
        }
    }
    return r;
}

DialectReply readAnthropic(const std::string& body, bool stream) {
    DialectReply r;
    auto block = [&](const OJson& b) {
        if (b["type"] == "text") r.text += b["text"].get<std::string>();
        if (b["type"] == "tool_use") r.calls.emplace_back(b["name"].get<std::string>(), b["input"]);
    };
    if (!stream) {
        OJson j = parse(body);
        for (const OJson& b : j["content"]) block(b);
        r.finish = j["stop_reason"].get<std::string>();
        r.stopSequence = j["stop_sequence"].is_string() ? j["stop_sequence"].get<std::string>() : "";
        r.promptTokens = j["usage"]["input_tokens"].get<int>() + j["usage"].value("cache_read_input_tokens", 0);
        r.completionTokens = j["usage"]["output_tokens"].get<int>();
        return r;
    }
    std::string args;
    for (const NamedEvent& e : namedEvents(body)) {
        const OJson& d = e.data;
        if (e.name == "content_block_start" && d["content_block"]["type"] == "tool_use")
            r.calls.emplace_back(d["content_block"]["name"].get<std::string>(), nullptr);
        if (e.name == "content_block_delta") {
            if (d["delta"]["type"] == "text_delta") r.text += d["delta"]["text"].get<std::string>();
            if (d["delta"]["type"] == "input_json_delta") args += d["delta"]["partial_json"].get<std::string>();
        }
        if (e.name == "message_delta") {
            r.finish = d["delta"]["stop_reason"].get<std::string>();
            r.stopSequence = d["delta"]["stop_sequence"].is_string() ? d["delta"]["stop_sequence"].get<std::string>() : "";
            r.promptTokens = d["usage"]["input_tokens"].get<int>() + d["usage"].value("cache_read_input_tokens", 0);
            r.completionTokens = d["usage"]["output_tokens"].get<int>();
        }
    }
    if (!r.calls.empty()) r.calls.back().second = parse(args);
    return r;
}

DialectReply readResponses(const std::string& body, bool stream) {
    OJson response;
    if (!stream) {
        response = parse(body);
    } else {
        for (const NamedEvent& e : namedEvents(body))
            if (e.name == "response.completed" || e.name == "response.incomplete") response = e.data["response"];
    }
    DialectReply r;
    for (const OJson& item : response["output"]) {
        if (item["type"] == "message")
            for (const OJson& part : item["content"]) r.text += part.value("text", std::string());
        if (item["type"] == "function_call")
            r.calls.emplace_back(item["name"].get<std::string>(), argumentsObject(item["arguments"]));
    }
    r.finish = response["status"].get<std::string>();
    r.promptTokens = response["usage"]["input_tokens"].get<int>();
    r.completionTokens = response["usage"]["output_tokens"].get<int>();
    return r;
}

DialectReply ask(int port, const std::string& dialect, const std::string& body, bool stream) {
    auto res = postJson(port, dialectPath(dialect), body);
    if (!res || res->status != 200) {
        DialectReply failed;
        failed.finish = "HTTP " + (res ? std::to_string(res->status) + " " + res->body : std::string("error"));
        return failed;
    }
    if (dialect == "openai") return readOpenAi(res->body, stream);
    if (dialect == "ollama") return readOllama(res->body, stream);
    if (dialect == "anthropic") return readAnthropic(res->body, stream);
    return readResponses(res->body, stream);
}

const std::vector<std::string> kDialects = {"openai", "ollama", "anthropic", "responses"};

} // namespace

class TestServerDialects : public QObject {
    Q_OBJECT
    ModelServer m_model;
    int m_port = 0;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineConfig ec;
        ec.modelPath = testDataPath("models/stories260K.gguf");
        ec.contextLength = 256;
        m_model = startModelServer(ec, "stories260K");
        QVERIFY2(m_model.error.empty(), m_model.error.c_str());
        m_port = m_model.port;
    }
    void cleanupTestCase() {
        if (m_model.server) m_model.server->stop();
    }

    // Greedy on the real model: every dialect, whole and streamed, writes the same text from the
    // same prompt, cut by the same limit.
    void sameTokensAndLimitInEveryDialect() {
        const std::map<std::string, std::string> cut = {
            {"openai", "length"}, {"ollama", "length"}, {"anthropic", "max_tokens"}, {"responses", "incomplete"}};
        DialectReply first;
        for (const std::string& d : kDialects)
            for (bool stream : {false, true}) {
                const DialectReply r = ask(m_port, d, dialectRequest(d, 24, "", stream), stream);
                const std::string what = d + (stream ? " streamed" : " whole") + ": " + r.finish + " " + r.text;
                QVERIFY2(r.finish == cut.at(d), what.c_str());
                QVERIFY2(r.completionTokens == 24, what.c_str());
                if (first.promptTokens < 0) {
                    first = r;
                    QVERIFY2(first.text.size() > 20, what.c_str());
                    continue;
                }
                QVERIFY2(r.promptTokens == first.promptTokens, what.c_str());
                QVERIFY2(r.text == first.text, (what + " | first: " + first.text).c_str());
            }
    }

    // A stop string taken from the middle of that text ends every dialect's reply right before
    // it, with the dialect's "stop"; Anthropic names the sequence that matched (the engine says
    // which), not another of the list.
    void sameStopInEveryDialect() {
        const DialectReply whole = ask(m_port, "openai", dialectRequest("openai", 24, "", false), false);
        QVERIFY(whole.text.size() > 20);
        const std::string stop = whole.text.substr(whole.text.size() / 2, 4);
        QVERIFY(stop.find('"') == std::string::npos && stop.find('\\') == std::string::npos);
        const std::string expected = whole.text.substr(0, whole.text.find(stop));
        const std::map<std::string, std::string> stopped = {
            {"openai", "stop"}, {"ollama", "stop"}, {"anthropic", "stop_sequence"}};
        for (const std::string d : {"openai", "ollama", "anthropic"}) // Responses has no stop strings
            for (bool stream : {false, true}) {
                const DialectReply r = ask(m_port, d, dialectRequest(d, 24, stop, stream), stream);
                const std::string what = std::string(d) + (stream ? " streamed" : " whole") + ": " + r.finish + " " + r.text;
                QVERIFY2(r.finish == stopped.at(d), what.c_str());
                QVERIFY2(r.text == expected, (what + " | expected: " + expected).c_str());
                if (std::string(d) == "anthropic") QCOMPARE(r.stopSequence, stop);
            }
        // Two stop strings, the later one in the text listed first: the earlier one matched.
        const std::string later = whole.text.substr(whole.text.size() - 4);
        QVERIFY(whole.text.find(later) > whole.text.find(stop));
        QVERIFY(later.find('"') == std::string::npos && later.find('\\') == std::string::npos);
        std::string body = dialectRequest("anthropic", 24, stop, false);
        body.replace(body.find(R"("stop_sequences":[)"), 18, R"("stop_sequences":[")" + later + R"(",)");
        const DialectReply r = ask(m_port, "anthropic", body, false);
        QCOMPARE(r.stopSequence, stop);
        QCOMPARE(r.text, expected);
    }

    // A scripted reply holding a tool call: every dialect, whole and streamed, reports the same
    // call (name, arguments) and its own word for a turn that ends in calls.
    void sameToolCallInEveryDialect() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n"
                           "</tool_call>");
        const std::map<std::string, std::string> tools = {
            {"openai", R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])"},
            {"ollama", R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])"},
            {"anthropic", R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}}])"},
            {"responses", R"("tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}])"}};
        const std::map<std::string, std::string> called = {
            {"openai", "tool_calls"}, {"ollama", "stop"}, {"anthropic", "tool_use"}, {"responses", "completed"}};
        const OJson args = {{"city", "Paris"}, {"days", 3}};
        for (const std::string& d : kDialects)
            for (bool stream : {false, true}) {
                const DialectReply r = ask(f.port, d, dialectRequest(d, 200, "", stream, tools.at(d)), stream);
                const std::string what = d + (stream ? " streamed" : " whole") + ": " + r.finish + " [" + r.text + "]";
                QVERIFY2(r.finish == called.at(d), what.c_str());
                QVERIFY2(r.calls.size() == 1, what.c_str());
                QVERIFY2(r.calls[0].first == "get_weather", what.c_str());
                QVERIFY2(r.calls[0].second == args, (what + " " + r.calls[0].second.dump()).c_str());
                QVERIFY2(r.text.find("<tool_call>") == std::string::npos, what.c_str());
            }
    }
};

QTEST_MAIN(TestServerDialects)
#include "test_server_dialects.moc"
