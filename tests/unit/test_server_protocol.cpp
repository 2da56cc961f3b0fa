// Tests of the server's protocol layer without HTTP: request parsing and validation, conversion
// to engine requests, response and chunk shapes, tool-call parsing, security helpers, and a
// corpus of hostile bodies that must all be refused with a 4xx error object.
#include "../server/hostile_corpus.h"

#include "server/openai_convert.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/security.h"
#include "server/tool_calls.h"
#include "tokenizer/chat_template/chat_json.h"

#include <QtTest>

#include <cmath>

using namespace hearth;
using namespace hearth::server;
using OJson = nlohmann::ordered_json;

namespace {

const std::string kHi = R"("messages":[{"role":"user","content":"hi"}])";

ChatCompletionRequest chatOk(const std::string& extra = {}) {
    auto r = parseChatCompletionRequest("{" + kHi + (extra.empty() ? "" : "," + extra) + "}");
    if (!r) qWarning("unexpected error: %s", r.error().message.c_str());
    return r ? *r : ChatCompletionRequest{};
}

ApiError chatErr(const std::string& body) {
    auto r = parseChatCompletionRequest(body);
    return r ? ApiError{0, "parsed"} : r.error();
}

// The OpenAI error shape: error.message (non-empty string), type (string), param and code
// (string or null).
bool hasErrorShape(const OJson& j) {
    if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return false;
    const OJson& e = j["error"];
    return e.contains("message") && e["message"].is_string() && !e["message"].get<std::string>().empty() &&
           e.contains("type") && e["type"].is_string() && e.contains("param") &&
           (e["param"].is_null() || e["param"].is_string()) && e.contains("code") &&
           (e["code"].is_null() || e["code"].is_string());
}

} // namespace

class TestServerProtocol : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void chatMinimal() {
        auto r = parseChatCompletionRequest(R"({"model":"x",)" + kHi + "}");
        QVERIFY(r);
        QCOMPARE(r->common.model, std::string("x"));
        QCOMPARE(r->messages.size(), size_t(1));
        QCOMPARE(r->messages[0]["role"].get<std::string>(), std::string("user"));
        QCOMPARE(r->messages[0]["content"].get<std::string>(), std::string("hi"));
        QVERIFY(!r->common.stream);
        QVERIFY(!r->common.maxTokens);
    }

    void chatContentParts() {
        auto r = parseChatCompletionRequest(
            R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
        QVERIFY(r);
        QCOMPARE(r->messages[0]["content"].get<std::string>(), std::string("a\nb"));
    }

    void chatAssistantToolCallsNormalised() {
        auto r = parseChatCompletionRequest(
            "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
            "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\","
            "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]},"
            "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"42\"}]}");
        QVERIFY(r);
        const OJson& a = r->messages[1];
        QVERIFY(a["content"].is_null());
        QCOMPARE(a["tool_calls"][0]["function"]["arguments"]["a"].get<int>(), 1);
        QCOMPARE(r->messages[2]["tool_call_id"].get<std::string>(), std::string("call_1"));
    }

    void samplingFields() {
        auto r = chatOk(R"("temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"repeat_penalty":1.1, "presence_penalty":0.5,"frequency_penalty":-0.5,"n":3,"seed":42,"user":"u", "max_completion_tokens":7,"max_tokens":9,"stream":true,"stream_options":{"include_usage":true}, "unknown_field":{"deep":[1,2,3]})");
        QCOMPARE(r.common.temperature, 0.5f);
        QCOMPARE(r.common.topP, 0.9f);
        QCOMPARE(r.common.topK, 40);
        QCOMPARE(r.common.minP, 0.05f);
        QCOMPARE(r.common.repeatPenalty, 1.1f);
        QCOMPARE(r.common.presencePenalty, 0.5f);
        QCOMPARE(r.common.frequencyPenalty, -0.5f);
        QCOMPARE(r.common.n, 3);
        QCOMPARE(*r.common.seed, uint64_t(42));
        QCOMPARE(*r.common.maxTokens, 7); // max_completion_tokens wins
        QVERIFY(r.common.stream);
        QVERIFY(r.common.includeUsage);
    }

    void stopForms() {
        QCOMPARE(chatOk(R"("stop":"END")").common.stop, std::vector<std::string>{"END"});
        QCOMPARE(chatOk(R"("stop":["a","b"])").common.stop, (std::vector<std::string>{"a", "b"}));
        QCOMPARE(chatErr("{" + kHi + R"(,"stop":["a",""]})").param, std::string("stop[1]"));
    }

    void logitBias() {
        auto r = chatOk(R"("logit_bias":{"5":-100,"7":3.5})");
        QCOMPARE(r.common.logitBias.size(), size_t(2));
        QCOMPARE(r.common.logitBias[0].first, 5);
        QVERIFY(std::isinf(r.common.logitBias[0].second) && r.common.logitBias[0].second < 0);
        QCOMPARE(r.common.logitBias[1].second, 3.5f);
        QCOMPARE(chatErr("{" + kHi + R"(,"logit_bias":{"x":1}})").param, std::string("logit_bias"));
    }

    void logprobsRules() {
        auto r = chatOk(R"("logprobs":true,"top_logprobs":3)");
        QVERIFY(r.common.logprobs);
        QCOMPARE(r.common.topLogprobs, 3);
        QCOMPARE(chatErr("{" + kHi + R"(,"top_logprobs":3})").param, std::string("top_logprobs"));
        auto c = parseCompletionRequest(R"({"prompt":"x","logprobs":2})");
        QVERIFY(c);
        QVERIFY(c->common.logprobs);
        QCOMPARE(c->common.topLogprobs, 2);
    }

    void errorsNameTheParameter() {
        ApiError e = chatErr("{" + kHi + R"(,"temperature":"hot"})");
        QCOMPARE(e.status, 400);
        QCOMPARE(e.param, std::string("temperature"));
        QCOMPARE(e.type, std::string("invalid_request_error"));
        QVERIFY(hasErrorShape(errorJson(e)));
        e = chatErr(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})");
        QCOMPARE(e.param, std::string("messages[0].content[0].image_url.url"));
        e = chatErr(R"({"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]})");
        QCOMPARE(e.param, std::string("messages[0].content[0].type"));
        e = chatErr("{" + kHi + R"(,"n":0})");
        QCOMPARE(e.param, std::string("n"));
        QVERIFY(QString::fromStdString(e.message).contains("between 1 and 128"));
    }

    void toolsAndChoice() {
        auto r = chatOk(R"("tools":[{"type":"function","function":{"name":"get_weather", "description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}], "tool_choice":{"type":"function","function":{"name":"get_weather"}})");
        QCOMPARE(r.tools.size(), size_t(1));
        QCOMPARE(r.tools[0].name, std::string("get_weather"));
        QCOMPARE(int(r.toolChoice.mode), int(ToolChoiceMode::Named));
        QVERIFY(r.toolsJson.is_array());
        tmpl::ChatRequest t = chatTemplateRequest(r);
        QVERIFY(t.addGenerationPrompt);
        QCOMPARE(OJson::parse(t.toolsJson)[0]["function"]["name"].get<std::string>(), std::string("get_weather"));
        r.toolChoice.mode = ToolChoiceMode::None;
        QVERIFY(chatTemplateRequest(r).toolsJson.empty());
    }

    // The server's messages reach templates unchanged as the engine's chat messages: typed where
    // they have that form, whole otherwise (the key orders of Ollama's and the Responses API's).
    void templateMessagesKeepTheMessages() {
        auto call = [](const char* id, const char* name, const OJson& arguments) {
            OJson c = OJson::object();
            if (*id) c["id"] = id;
            c["type"] = "function";
            c["function"] = {{"name", name}};
            if (!arguments.is_null()) c["function"]["arguments"] = arguments;
            return c;
        };
        OJson body = OJson::object();
        body["messages"] = OJson::array(
            {{{"role", "system"}, {"content", "s"}},
             {{"role", "user"}, {"content", OJson::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}})}, {"name", "n"}},
             {{"role", "assistant"},
              {"tool_calls", OJson::array({call("c1", "f", "{\"x\": [1, 2.5]}"), call("", "g", "oops"),
                                           call("c3", "h", "\"{}\""), call("c4", "k", nullptr)})}},
             {{"role", "tool"}, {"content", "42"}, {"tool_call_id", "c1"}}});
        auto r = parseChatCompletionRequest(body.dump());
        QVERIFY(bool(r));
        OJson messages = r->messages;
        messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", messages[2]["tool_calls"]},
                            {"reasoning_content", "r"}});                                  // Ollama's order
        messages.push_back({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "42"}}); // the Responses API's
        const std::vector<tmpl::ChatMessage> typed = templateMessages(messages);
        QCOMPARE(typed.size(), messages.size());
        for (size_t i = 0; i < typed.size(); ++i) {
            QCOMPARE(tmpl::chatMessageJson(typed[i]).dump(), messages[i].dump());
            QCOMPARE(typed[i].rawJson.empty(), i < 4);
        }
        QCOMPARE(typed[2].toolCalls.size(), size_t(4));
        QCOMPARE(typed[2].toolCalls[0].arguments, std::string(R"({"x":[1,2.5]})"));
        QVERIFY(!typed[2].content.has_value());
    }

    void completionPrompts() {
        auto a = parseCompletionRequest(R"({"prompt":"Once"})");
        QVERIFY(a && !a->promptIsTokens && a->promptText == "Once");
        auto b = parseCompletionRequest(R"({"prompt":["Once"]})");
        QVERIFY(b && b->promptText == "Once");
        auto c = parseCompletionRequest(R"({"prompt":[1,2,3]})");
        QVERIFY(c && c->promptIsTokens && c->promptTokens == (std::vector<int32_t>{1, 2, 3}));
        auto d = parseCompletionRequest(R"({"prompt":[[4,5]],"echo":true})");
        QVERIFY(d && d->promptTokens == (std::vector<int32_t>{4, 5}) && d->echo);
        auto e = parseCompletionRequest(R"({"prompt":["a","b"]})");
        QVERIFY(!e);
        QCOMPARE(e.error().param, std::string("prompt"));
    }

    void generationRequestLimits() {
        ModelLimits lim{100, 64, 4096};
        CommonParams p;
        auto g = generationRequest(p, {1, 2, 3, 4}, lim);
        QVERIFY(g);
        QCOMPARE(g->maxTokens, 60); // the rest of the context
        p.maxTokens = 61;
        auto over = generationRequest(p, {1, 2, 3, 4}, lim);
        QVERIFY(!over);
        QCOMPARE(over.error().code, std::string("context_length_exceeded"));
        QCOMPARE(over.error().status, 400);
        p.maxTokens = 5;
        p.logitBias = {{100, 1.0f}};
        QCOMPARE(generationRequest(p, {1}, lim).error().param, std::string("logit_bias"));
        p.logitBias.clear();
        p.stop = {"x"};
        p.n = 2;
        p.seed = 7;
        p.temperature = 0.0f;
        auto ok = generationRequest(p, {1}, lim);
        QVERIFY(ok);
        QCOMPARE(ok->n, 2);
        QCOMPARE(ok->sampling.seed, uint64_t(7));
        QCOMPARE(ok->stopStrings, std::vector<std::string>{"x"});
        QVERIFY(!generationRequest(p, std::vector<int32_t>(64, 1), lim));
        QVERIFY(!generationRequest(p, {100}, lim)); // prompt id outside the vocabulary
        CommonParams noSeed;
        auto s1 = generationRequest(noSeed, {1}, lim), s2 = generationRequest(noSeed, {1}, lim);
        QVERIFY(s1->sampling.seed != s2->sampling.seed);
    }

    void responseShapes() {
        ResponseMeta meta{"chatcmpl-x", 1700000000, "m"};
        Usage u;
        u.promptTokens = 5;
        u.cachedPromptTokens = 2;
        u.completionTokens = 3;
        ChoiceOutput c;
        c.text = c.content = "hello";
        c.reason = FinishReason::Length;
        OJson j = chatCompletionJson(meta, {c}, u, false);
        QCOMPARE(j["object"].get<std::string>(), std::string("chat.completion"));
        QCOMPARE(j["choices"][0]["message"]["content"].get<std::string>(), std::string("hello"));
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
        QCOMPARE(j["usage"]["total_tokens"].get<int>(), 8);
        QCOMPARE(j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 2);
        c.content.clear();
        c.calls = {{"call_abc", "f", "{\"a\":1}"}};
        j = chatCompletionJson(meta, {c}, u, false);
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("length")); // cut: as OpenAI
        c.reason = FinishReason::Stop;
        j = chatCompletionJson(meta, {c}, u, false);
        QCOMPARE(j["choices"][0]["finish_reason"].get<std::string>(), std::string("tool_calls"));
        QVERIFY(j["choices"][0]["message"]["content"].is_null());
        QCOMPARE(j["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>(),
                 std::string("{\"a\":1}"));
        OJson chunk = chatChunkJson(meta, 1, {{"content", "x"}}, nullptr);
        QCOMPARE(chunk["object"].get<std::string>(), std::string("chat.completion.chunk"));
        QCOMPARE(chunk["choices"][0]["index"].get<int>(), 1);
        QVERIFY(chunk["choices"][0]["finish_reason"].is_null());
        OJson comp = completionJson(meta, {c}, u, true, 0);
        QCOMPARE(comp["object"].get<std::string>(), std::string("text_completion"));
        QVERIFY(comp["choices"][0]["logprobs"].contains("token_logprobs"));
        QCOMPARE(usageChunkJson(meta, "chat.completion.chunk", u)["choices"].size(), size_t(0));
        const std::string sse = sseEvent(chunk);
        QVERIFY(sse.rfind("data: {", 0) == 0 && sse.size() > 2 && sse.substr(sse.size() - 2) == "\n\n");
        // Invalid UTF-8 in generated text never throws.
        c.text = "\xff\xfe";
        QVERIFY(!dumpJson(chatCompletionJson(meta, {c}, u, false)).empty());
        TokenLogprob lp{"a", -0.5f, {{"b", -1.0f}}};
        OJson cl = chatLogprobsJson({lp});
        QCOMPARE(cl["content"][0]["bytes"][0].get<int>(), int('a'));
        QCOMPARE(cl["content"][0]["top_logprobs"][0]["token"].get<std::string>(), std::string("b"));
    }

    void toolCallsHermes() {
        auto p = parseToolCalls("Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                "{\"city\": \"Paris\"}}\n</tool_call>",
                                {"get_weather"});
        QCOMPARE(p.calls.size(), size_t(1));
        QCOMPARE(p.calls[0].name, std::string("get_weather"));
        QCOMPARE(p.calls[0].arguments, std::string("{\"city\":\"Paris\"}"));
        QVERIFY(p.calls[0].id.rfind("call_", 0) == 0 && p.calls[0].id.size() == 29);
        QCOMPARE(p.content, std::string("Let me check."));
        auto two = parseToolCalls("<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n"
                                  "<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":[1]}}</tool_call>",
                                  {});
        QCOMPARE(two.calls.size(), size_t(2));
        QVERIFY(two.calls[0].id != two.calls[1].id);
    }

    void toolCallsMistral() {
        auto p = parseToolCalls("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": 1}}, "
                                "{\"name\": \"g\", \"arguments\": {}}]",
                                {});
        QCOMPARE(p.calls.size(), size_t(2));
        QCOMPARE(p.calls[1].name, std::string("g"));
        QCOMPARE(p.calls[0].arguments, std::string("{\"q\":1}"));
        auto v11 = parseToolCalls("[TOOL_CALLS]search[ARGS]{\"query\": \"x\"}", {});
        QCOMPARE(v11.calls.size(), size_t(1));
        QCOMPARE(v11.calls[0].name, std::string("search"));
        QCOMPARE(v11.calls[0].arguments, std::string("{\"query\":\"x\"}"));
    }

    void toolCallsLlama() {
        auto p = parseToolCalls("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
                                {"get_weather"});
        QCOMPARE(p.calls.size(), size_t(1));
        QCOMPARE(p.calls[0].arguments, std::string("{\"city\":\"Oslo\"}"));
        QVERIFY(p.content.empty());
        auto tagged = parseToolCalls("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {}}",
                                     {"get_weather"});
        QCOMPARE(tagged.calls.size(), size_t(1));
        // JSON naming an unknown function, or ordinary text, stays content.
        auto unknown = parseToolCalls("{\"name\": \"other\", \"parameters\": {}}", {"get_weather"});
        QVERIFY(unknown.calls.empty());
        QCOMPARE(unknown.content, std::string("{\"name\": \"other\", \"parameters\": {}}"));
        QVERIFY(parseToolCalls("The weather is fine.", {"get_weather"}).calls.empty());
        QVERIFY(parseToolCalls("<tool_call>{not json</tool_call>", {}).calls.empty());
        QVERIFY(mightBeToolCall("  <tool"));
        QVERIFY(mightBeToolCall("[TOOL"));
        QVERIFY(mightBeToolCall("{\"na"));
        QVERIFY(!mightBeToolCall("Hello"));
    }

    // Output that ends inside a call (max_tokens): the call as far as written, never markup; a
    // call whose name is not complete is left out, and so is its markup.
    void toolCallsCutShort() {
        auto h = parseToolCalls("Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
                                {"get_weather"});
        QCOMPARE(h.calls.size(), size_t(2));
        QCOMPARE(h.calls[1].name, std::string("get_weather"));
        QCOMPARE(h.calls[1].arguments, std::string("{\"city\": \"Par"));
        QCOMPARE(h.content, std::string("Checking."));
        auto noArgs = parseToolCalls("<tool_call>\n{\"name\": \"get_weather\", \"argu", {});
        QCOMPARE(noArgs.calls.size(), size_t(1));
        QCOMPARE(noArgs.calls[0].arguments, std::string());
        auto wrapped = parseToolCalls("<tool_call>{\"function\": {\"name\": \"f\", \"parameters\": {\"q\": [1, 2", {});
        QCOMPARE(wrapped.calls.size(), size_t(1));
        QCOMPARE(wrapped.calls[0].name, std::string("f"));
        QCOMPARE(wrapped.calls[0].arguments, std::string("{\"q\": [1, 2"));
        auto nameCut = parseToolCalls("Sure.\n<tool_call>\n{\"name\": \"get_wea", {});
        QVERIFY(nameCut.calls.empty());
        QCOMPARE(nameCut.content, std::string("Sure."));
        // Cut inside or right after the next call's opening tag: the calls before it, no markup.
        for (const char* tail : {"<tool_", "<tool_call>", "<tool_call>\n"}) {
            auto next = parseToolCalls(std::string("Sure.\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n") + tail, {});
            QCOMPARE(next.calls.size(), size_t(1));
            QCOMPARE(next.content, std::string("Sure."));
        }
        QCOMPARE(parseToolCalls("Let me look.\n<tool_c", {}).content, std::string("Let me look."));
        // A last call that does not read after good ones: the good ones.
        auto bad = parseToolCalls("<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{oops}</tool_call>", {});
        QCOMPARE(bad.calls.size(), size_t(1));
        // Extra properties the schema allows, cut in a key: the arguments up to the cut.
        auto extra = parseToolCalls("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1, \"extra_1\": true, \"ext", {});
        QCOMPARE(extra.calls.size(), size_t(1));
        QCOMPARE(extra.calls[0].arguments, std::string("{\"a\": 1, \"extra_1\": true, \"ext"));
        auto mistral = parseToolCalls("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"x\": \"y", {});
        QCOMPARE(mistral.calls.size(), size_t(2));
        QCOMPARE(mistral.calls[1].arguments, std::string("{\"x\": \"y"));
        auto v11 = parseToolCalls("[TOOL_CALLS]search[ARGS]{\"query\": \"x", {});
        QCOMPARE(v11.calls.size(), size_t(1));
        QCOMPARE(v11.calls[0].arguments, std::string("{\"query\": \"x"));
        auto llama = parseToolCalls("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Os", {"get_weather"});
        QCOMPARE(llama.calls.size(), size_t(1));
        QCOMPARE(llama.calls[0].arguments, std::string("{\"city\": \"Os"));
        // A cut JSON answer that names no known tool stays content.
        auto answer = parseToolCalls("{\"name\": \"Bob\", \"age\": 4", {"get_weather"});
        QVERIFY(answer.calls.empty());
        QCOMPARE(answer.content, std::string("{\"name\": \"Bob\", \"age\": 4"));
        QVERIFY(parseToolCalls("{\"name\": \"Bob\", \"age\": 4", {}).calls.empty());
    }

    void security() {
        QVERIFY(constantTimeEquals("secret", "secret"));
        QVERIFY(!constantTimeEquals("secret", "secreT"));
        QVERIFY(!constantTimeEquals("secret", "secret2"));
        QVERIFY(!constantTimeEquals("", "x"));
        QCOMPARE(presentedApiKey("Bearer abc", ""), std::string("abc"));
        QCOMPARE(presentedApiKey("bearer  abc ", ""), std::string("abc"));
        QCOMPARE(presentedApiKey("", "xyz"), std::string("xyz"));
        QCOMPARE(presentedApiKey("Basic abc", ""), std::string(""));
        QVERIFY(isLoopbackBind("127.0.0.1"));
        QVERIFY(isLoopbackBind("::1"));
        QVERIFY(!isLoopbackBind("0.0.0.0"));
        for (const char* ok : {"localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:1", "[::1]",
                               "[::1]:8080", "LOCALHOST:80", ""})
            QVERIFY2(hostHeaderAllowed(ok), ok);
        for (const char* bad : {"evil.com", "evil.com:8080", "127.0.0.1.evil.com", "localhost.evil",
                                "localhost:80x", "[::1", "[::2]:80", "127.0.0.2", "0.0.0.0"})
            QVERIFY2(!hostHeaderAllowed(bad), bad);
        QVERIFY(originAllowed("http://a", {"http://a"}));
        QVERIFY(!originAllowed("http://b", {"http://a"}));
        QVERIFY(originAllowed("http://b", {"*"}));
        QVERIFY(!originAllowed("", {"*"}));
    }

    void tokenizeBodies() {
        ParseLimits lim;
        auto t = parseTokenizeRequest(R"({"content":"abc","add_special":true})", lim);
        QVERIFY(t && t->content == "abc" && t->addSpecial);
        QVERIFY(!parseTokenizeRequest(R"({"content":5})", lim));
        QVERIFY(!parseTokenizeRequest(R"({})", lim));
        auto d = parseDetokenizeRequest(R"({"tokens":[1,2]})", lim);
        QVERIFY(d && *d == (std::vector<int32_t>{1, 2}));
        QVERIFY(!parseDetokenizeRequest(R"({"tokens":[-1]})", lim));
        QVERIFY(!parseDetokenizeRequest(R"({"tokens":"x"})", lim));
    }

    void hostileCorpusIsRefused() {
        const auto corpus = hearth::test::hostileBodies();
        QVERIFY2(corpus.size() >= 200, qPrintable(QString::number(corpus.size())));
        int i = 0;
        for (const auto& h : corpus) {
            ApiError e;
            bool parsed;
            if (h.chat) {
                auto r = parseChatCompletionRequest(h.body);
                parsed = r.isOk();
                if (!parsed) e = r.error();
            } else {
                auto r = parseCompletionRequest(h.body);
                parsed = r.isOk();
                if (!parsed) e = r.error();
            }
            const QString what = QStringLiteral("#%1 %2: %3")
                                     .arg(i++)
                                     .arg(h.chat ? "chat" : "completions")
                                     .arg(QString::fromUtf8(h.body.substr(0, 160).c_str()));
            QVERIFY2(!parsed, qPrintable(what));
            QVERIFY2(e.status >= 400 && e.status < 500, qPrintable(what));
            QVERIFY2(hasErrorShape(errorJson(e)), qPrintable(what));
        }
    }
};

QTEST_GUILESS_MAIN(TestServerProtocol)
#include "test_server_protocol.moc"
