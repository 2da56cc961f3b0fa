// Tests of the Anthropic Messages API (/v1/messages, /v1/messages/count_tokens): parsing of every
// field and content block (and their wrong types), then over real HTTP with a fake engine: whole
// and streamed messages with the exact event sequence, tool_use blocks, stop sequences and
// stop_reason, usage, x-api-key auth, cancel on disconnect, and a hostile corpus.
#include "../server/hostile_anthropic.h"
#include "../server/new_api_test_support.h"

#include "server/anthropic_request.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::test;
using namespace hearth::server;

namespace {

const std::string kHi = R"("messages":[{"role":"user","content":"hi"}])";
const std::string kBody = "{\"model\":\"claude\",\"max_tokens\":64," + kHi + "}";

AnthropicRequest parsedOk(const std::string& body, bool count = false) {
    auto r = parseAnthropicRequest(body, ParseLimits{}, count);
    if (!r) qWarning("unexpected error: %s", r.error().message.c_str());
    return r ? *r : AnthropicRequest{};
}

ApiError parsedErr(const std::string& body, bool count = false) {
    auto r = parseAnthropicRequest(body, ParseLimits{}, count);
    return r ? ApiError{0, "parsed"} : r.error();
}

std::string with(const std::string& fields) {
    return "{\"max_tokens\":64," + kHi + "," + fields + "}";
}

const char* kToolReply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const char* kTools = R"("tools":[{"name":"get_weather","description":"Weather now","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}])";

} // namespace

class TestServerAnthropic : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesEveryField() {
        const std::string body = R"({"model":"claude-x","max_tokens":100,"temperature":0.5,"top_p":0.9,"top_k":40,
            "stop_sequences":["END","##"],"stream":true,"metadata":{"user_id":"u1"},
            "system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}],
            "messages":[{"role":"user","content":"hi"},
                        {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Let me check."},
                            {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
                        {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},
                            {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"boom"}],"is_error":true},
                            {"type":"text","text":"thanks"}]}],
            "tools":[{"name":"get_weather","description":"Weather now","input_schema":{"type":"object"}}],
            "tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}})";
        AnthropicRequest r = parsedOk(body);
        const CommonParams& p = r.chat.common;
        QCOMPARE(p.model, std::string("claude-x"));
        QCOMPARE(*p.maxTokens, 100);
        QCOMPARE(p.temperature, 0.5f);
        QCOMPARE(p.topP, 0.9f);
        QCOMPARE(p.topK, 40);
        QCOMPARE(p.stop, (std::vector<std::string>{"END", "##"}));
        QVERIFY(p.stream);
        const OJson& m = r.chat.messages;
        QCOMPARE(m.size(), size_t(6));
        QCOMPARE(m[0]["role"].get<std::string>(), std::string("system"));
        QCOMPARE(m[0]["content"].get<std::string>(), std::string("Be brief.\nBe kind."));
        QCOMPARE(m[1]["content"].get<std::string>(), std::string("hi"));
        QCOMPARE(m[2]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(m[2]["content"].get<std::string>(), std::string("Let me check."));
        QCOMPARE(m[2]["tool_calls"][0]["id"].get<std::string>(), std::string("toolu_1"));
        QCOMPARE(m[2]["tool_calls"][0]["function"]["name"].get<std::string>(), std::string("get_weather"));
        QCOMPARE(m[2]["tool_calls"][0]["function"]["arguments"]["city"].get<std::string>(), std::string("Paris"));
        QCOMPARE(m[3]["role"].get<std::string>(), std::string("tool"));
        QCOMPARE(m[3]["tool_call_id"].get<std::string>(), std::string("toolu_1"));
        QCOMPARE(m[3]["content"].get<std::string>(), std::string("sunny"));
        QCOMPARE(m[4]["content"].get<std::string>(), std::string("Error: boom"));
        QCOMPARE(m[5]["role"].get<std::string>(), std::string("user"));
        QCOMPARE(m[5]["content"].get<std::string>(), std::string("thanks"));
        QCOMPARE(r.chat.tools.size(), size_t(1));
        QCOMPARE(r.chat.toolsJson[0]["function"]["parameters"]["type"].get<std::string>(), std::string("object"));
        QCOMPARE(r.chat.toolsJson[0]["function"]["description"].get<std::string>(), std::string("Weather now"));
        QVERIFY(r.chat.toolChoice.mode == ToolChoiceMode::Named);
        QCOMPARE(r.chat.toolChoice.name, std::string("get_weather"));
        QVERIFY(!r.chat.toolChoice.parallel); // disable_parallel_tool_use
    }

    void toolChoiceModesAndDefaults() {
        AnthropicRequest d = parsedOk(kBody);
        QCOMPARE(d.chat.common.temperature, 1.0f);
        QVERIFY(!d.chat.common.stream);
        QVERIFY(d.chat.toolsJson.is_null());
        const std::string tools = std::string(kTools);
        QVERIFY(parsedOk(with(tools + R"(,"tool_choice":{"type":"auto"})")).chat.toolChoice.mode == ToolChoiceMode::Auto);
        QVERIFY(parsedOk(with(tools + R"(,"tool_choice":{"type":"any"})")).chat.toolChoice.mode == ToolChoiceMode::Required);
        QVERIFY(parsedOk(with(tools + R"(,"tool_choice":{"type":"any"})")).chat.toolChoice.parallel);
        QVERIFY(parsedOk(with(tools + R"(,"tool_choice":{"type":"none"})")).chat.toolChoice.mode == ToolChoiceMode::None);
        // A custom-typed tool is a client tool.
        QCOMPARE(parsedOk(with(R"("tools":[{"type":"custom","name":"f","input_schema":{}}])")).chat.tools.size(), size_t(1));
        // count_tokens needs no max_tokens; messages does.
        QCOMPARE(parsedOk("{" + kHi + "}", true).chat.messages.size(), size_t(1));
        QCOMPARE(parsedErr("{" + kHi + "}").param, std::string("max_tokens"));
        // thinking reaches the template as enable_thinking.
        QCOMPARE(parsedOk(with(R"("thinking":{"type":"enabled","budget_tokens":1024})")).chat.templateKwargs["enable_thinking"].get<bool>(), true);
        QCOMPARE(parsedOk(with(R"("thinking":{"type":"disabled"})")).chat.templateKwargs["enable_thinking"].get<bool>(), false);
        QVERIFY(!parsedOk(kBody).chat.templateKwargs.contains("enable_thinking"));
        QCOMPARE(parsedErr(with(R"("thinking":{"type":"maybe"})")).param, std::string("thinking.type"));
        QCOMPARE(parsedErr(with(R"("thinking":{"type":"enabled","budget_tokens":0})")).param, std::string("thinking.budget_tokens"));
        QCOMPARE(parsedErr(with(R"("thinking":true)")).param, std::string("thinking"));
        // An empty block list is an empty user turn.
        QCOMPARE(parsedOk(R"({"max_tokens":5,"messages":[{"role":"user","content":[]}]})").chat.messages[0]["content"].get<std::string>(), std::string(""));
    }

    void badFieldsNameThemselves() {
        struct Case { std::string body; std::string param; };
        const Case cases[] = {
            {with(R"("temperature":1.5)"), "temperature"},
            {with(R"("top_k":-1)"), "top_k"},
            {with(R"("top_p":"x")"), "top_p"},
            {with(R"("stop_sequences":[""])"), "stop_sequences.0"},
            {with(R"("stop_sequences":"x")"), "stop_sequences"},
            {with(R"("metadata":[])"), "metadata"},
            {with(R"("system":5)"), "system"},
            {with(R"("stream":"yes")"), "stream"},
            {with(R"("tools":[{"name":"f"}])"), "tools.0.input_schema"},
            {with(R"("tools":[{"type":"web_search_20250305","name":"web_search"}])"), "tools.0.type"},
            {with(R"("tool_choice":{"type":"any"})"), "tool_choice"},
            {R"({"max_tokens":"5",)" + kHi + "}", "max_tokens"},
            {R"({"max_tokens":0,)" + kHi + "}", "max_tokens"},
            {R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})", "messages.0.role"},
            {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})", "messages.0.content[0].source.type"},
            {R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"image","source":{}}]}]})", "messages.0.content[0].type"},
            {R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]}]})", "messages.0.content[0].input"},
            {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]})", "messages.0.content[0].tool_use_id"},
        };
        for (const Case& c : cases) {
            const ApiError e = parsedErr(c.body);
            QVERIFY2(e.status == 400, c.body.c_str());
            QCOMPARE(e.param, c.param);
            QVERIFY2(e.message.find(c.param) != std::string::npos, e.message.c_str());
        }
        // Images get a clear reason: URLs are not fetched; the base64 ones are parsed (the model
        // decides later whether it takes them).
        const ApiError img = parsedErr(
            R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https:\/\/x\/a.png"}}]}]})");
        QVERIFY2(img.message.find("does not fetch image URLs") != std::string::npos, img.message.c_str());
        auto parsed = parseAnthropicRequest(
            R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}},{"type":"text","text":"What?"}]}]})",
            {}, false);
        QVERIFY(parsed.isOk());
        QCOMPARE(parsed->chat.images, (std::vector<std::string>{"hi"}));
        QCOMPARE(parsed->chat.messages[0]["content"].get<std::string>(), std::string("<__media__>\nWhat?"));
        // The system role has a hint.
        QVERIFY(parsedErr(R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})").message.find("top-level 'system'") != std::string::npos);
    }

    void errorShapeByStatus() {
        auto type = [](int status) {
            ApiError e;
            e.status = status;
            e.message = "m";
            return anthropicErrorJson(e)["error"]["type"].get<std::string>();
        };
        QCOMPARE(type(400), std::string("invalid_request_error"));
        QCOMPARE(type(401), std::string("authentication_error"));
        QCOMPARE(type(403), std::string("permission_error"));
        QCOMPARE(type(404), std::string("not_found_error"));
        QCOMPARE(type(413), std::string("request_too_large"));
        QCOMPARE(type(429), std::string("rate_limit_error"));
        QCOMPARE(type(500), std::string("api_error"));
        QCOMPARE(type(503), std::string("api_error"));
        ApiError e = invalidRequest("bad");
        QVERIFY(isAnthropicError(anthropicErrorJson(e)));
        QVERIFY(isAnthropicPath("/v1/messages") && isAnthropicPath("/v1/messages/count_tokens"));
        QVERIFY(!isAnthropicPath("/v1/chat/completions") && !isAnthropicPath("/v1/messagesx"));
    }

    void hostileCorpusParses() {
        int i = 0;
        for (const HostileApiBody& h : hostileApiBodies()) {
            if (h.api == NewApi::Responses) continue;
            const ApiError e = parsedErr(h.body, h.api == NewApi::CountTokens);
            const QString what = QStringLiteral("#%1: %2").arg(i++).arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(e.status >= 400 && e.status < 500, qPrintable(what));
            QVERIFY2(!e.message.empty(), qPrintable(what));
        }
        // Negative control: the valid bodies the corpus is built on do parse.
        QCOMPARE(parsedErr(kBody).status, 0);
        QCOMPARE(parsedErr("{" + kHi + "}", true).status, 0);
    }

    void wholeMessage() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/messages", kBody, {{"anthropic-version", "2023-06-01"}});
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QVERIFY(j["id"].get<std::string>().rfind("msg_", 0) == 0);
        QCOMPARE(j["type"].get<std::string>(), std::string("message"));
        QCOMPARE(j["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(j["model"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(j["content"].size(), size_t(1));
        QCOMPARE(j["content"][0]["type"].get<std::string>(), std::string("text"));
        QCOMPARE(j["content"][0]["text"].get<std::string>(), std::string("Hello there, friend."));
        QCOMPARE(j["stop_reason"].get<std::string>(), std::string("end_turn"));
        QVERIFY(j["stop_sequence"].is_null());
        const GenerationRequest g = f.engine->lastRequest();
        QCOMPARE(j["usage"]["input_tokens"].get<int>() + j["usage"]["cache_read_input_tokens"].get<int>(), int(g.prompt.size()));
        QVERIFY(j["usage"]["output_tokens"].get<int>() > 0);
        // count_tokens counts the same prompt.
        auto c = postJson(f.port, "/v1/messages/count_tokens", "{\"model\":\"m\"," + kHi + "}");
        QCOMPARE(c->status, 200);
        QCOMPARE(parse(c->body)["input_tokens"].get<int>(), int(g.prompt.size()));
        // Sampling settings reach the engine; a system prompt is rendered first.
        auto s = postJson(f.port, "/v1/messages", with(R"("temperature":0.25,"top_p":0.5,"top_k":7,"system":"Be brief.")"));
        QCOMPARE(s->status, 200);
        const GenerationRequest g2 = f.engine->lastRequest();
        QCOMPARE(g2.sampling.temperature, 0.25f);
        QCOMPARE(g2.sampling.topP, 0.5f);
        QCOMPARE(g2.sampling.topK, 7);
        QCOMPARE(g2.maxTokens, 64);
        auto text = f.engine->tokenizer().decode(g2.prompt);
        QVERIFY(text && text->find("system: Be brief.\nuser: hi\nassistant:") != std::string::npos);
        // A final assistant turn is a prefill the model continues: no new assistant turn.
        auto pre = postJson(f.port, "/v1/messages", R"({"max_tokens":8,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Once upon"}]})");
        QCOMPARE(pre->status, 200);
        auto preText = f.engine->tokenizer().decode(f.engine->lastRequest().prompt);
        QVERIFY(preText);
        const std::string tail = "user: hi\nassistant: Once upon\n";
        QVERIFY2(preText->size() >= tail.size() &&
                     preText->compare(preText->size() - tail.size(), tail.size(), tail) == 0,
                 preText->c_str());
        // Requests are counted under their route.
        const std::string metrics = client(f.port).Get("/metrics")->body;
        QVERIFY(metrics.find("path=\"/v1/messages\",code=\"200\"") != std::string::npos);
        QVERIFY(metrics.find("path=\"/v1/messages/count_tokens\"") != std::string::npos);
        // max_tokens cuts the text.
        auto cut = postJson(f.port, "/v1/messages", "{\"max_tokens\":2," + kHi + "}");
        QCOMPARE(parse(cut->body)["stop_reason"].get<std::string>(), std::string("max_tokens"));
        QCOMPARE(parse(cut->body)["usage"]["output_tokens"].get<int>(), 2);
    }

    void stopSequences() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/messages", with(R"("stop_sequences":["zzz","there"])"));
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["content"][0]["text"].get<std::string>(), std::string("Hello "));
        QCOMPARE(j["stop_reason"].get<std::string>(), std::string("stop_sequence"));
        QCOMPARE(j["stop_sequence"].get<std::string>(), std::string("there"));
        QCOMPARE(f.engine->lastRequest().stopStrings, (std::vector<std::string>{"zzz", "there"}));
        // A stop sequence that never shows: end_turn, stop_sequence null (negative control).
        OJson n = parse(postJson(f.port, "/v1/messages", with(R"("stop_sequences":["zzz"])"))->body);
        QCOMPARE(n["stop_reason"].get<std::string>(), std::string("end_turn"));
        QVERIFY(n["stop_sequence"].is_null());
        // Streamed: message_delta carries it.
        auto s = postJson(f.port, "/v1/messages", with(R"("stop_sequences":["friend"],"stream":true)"));
        auto events = namedEvents(s->body);
        QVERIFY(events.size() >= 3);
        const OJson& delta = events[events.size() - 2].data;
        QCOMPARE(delta["type"].get<std::string>(), std::string("message_delta"));
        QCOMPARE(delta["delta"]["stop_reason"].get<std::string>(), std::string("stop_sequence"));
        QCOMPARE(delta["delta"]["stop_sequence"].get<std::string>(), std::string("friend"));
    }

    void streamedMessage() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/messages", with(R"("stream":true)"));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->get_header_value("Content-Type").find("text/event-stream") == 0);
        auto events = namedEvents(r->body);
        std::vector<std::string> names = eventNames(events);
        // message_start, ping, content_block_start, deltas..., content_block_stop, message_delta, message_stop
        QVERIFY(names.size() >= 7);
        QCOMPARE(names[0], std::string("message_start"));
        QCOMPARE(names[1], std::string("ping"));
        QCOMPARE(names[2], std::string("content_block_start"));
        QCOMPARE(names[names.size() - 3], std::string("content_block_stop"));
        QCOMPARE(names[names.size() - 2], std::string("message_delta"));
        QCOMPARE(names[names.size() - 1], std::string("message_stop"));
        std::string text;
        for (size_t i = 3; i + 3 < names.size(); ++i) {
            QCOMPARE(names[i], std::string("content_block_delta"));
            QCOMPARE(events[i].data["index"].get<int>(), 0);
            QCOMPARE(events[i].data["delta"]["type"].get<std::string>(), std::string("text_delta"));
            text += events[i].data["delta"]["text"].get<std::string>();
        }
        QCOMPARE(text, std::string("Hello there, friend."));
        for (const NamedEvent& e : events) QCOMPARE(e.data["type"].get<std::string>(), e.name);
        const OJson& start = events[0].data["message"];
        QVERIFY(start["id"].get<std::string>().rfind("msg_", 0) == 0);
        QVERIFY(start["content"].is_array() && start["content"].empty());
        QVERIFY(start["stop_reason"].is_null());
        QVERIFY(start["usage"]["input_tokens"].get<int>() > 0);
        QCOMPARE(events[2].data["content_block"]["type"].get<std::string>(), std::string("text"));
        const OJson& delta = events[names.size() - 2].data;
        QCOMPARE(delta["delta"]["stop_reason"].get<std::string>(), std::string("end_turn"));
        QVERIFY(delta["usage"]["output_tokens"].get<int>() > 0);
    }

    void toolUseBlocks() {
        START_FAKE_SERVER(f);
        f.engine->setReply(kToolReply);
        auto r = postJson(f.port, "/v1/messages", with(kTools));
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QCOMPARE(j["stop_reason"].get<std::string>(), std::string("tool_use"));
        QCOMPARE(j["content"].size(), size_t(1));
        const OJson& b = j["content"][0];
        QCOMPARE(b["type"].get<std::string>(), std::string("tool_use"));
        QVERIFY(b["id"].get<std::string>().rfind("toolu_", 0) == 0);
        QCOMPARE(b["name"].get<std::string>(), std::string("get_weather"));
        QVERIFY(b["input"].is_object());
        QCOMPARE(b["input"]["city"].get<std::string>(), std::string("Paris"));
        // Streamed: a tool_use block as the call is written (input_json_delta fragments).
        auto s = postJson(f.port, "/v1/messages", with(std::string(kTools) + R"(,"stream":true)"));
        auto events = namedEvents(s->body);
        auto names = eventNames(events);
        QVERIFY(names.size() >= 7);
        const std::vector<std::string> head = {"message_start", "ping", "content_block_start"};
        const std::vector<std::string> tail = {"content_block_stop", "message_delta", "message_stop"};
        QCOMPARE(std::vector<std::string>(names.begin(), names.begin() + 3), head);
        QCOMPARE(std::vector<std::string>(names.end() - 3, names.end()), tail);
        QCOMPARE(events[2].data["content_block"]["type"].get<std::string>(), std::string("tool_use"));
        QCOMPARE(events[2].data["content_block"]["name"].get<std::string>(), std::string("get_weather"));
        QVERIFY(events[2].data["content_block"]["id"].get<std::string>().rfind("toolu_", 0) == 0);
        QVERIFY(events[2].data["content_block"]["input"].empty());
        std::string partial;
        for (size_t i = 3; i + 3 < events.size(); ++i) {
            QCOMPARE(names[i], std::string("content_block_delta"));
            QCOMPARE(events[i].data["index"].get<int>(), 0);
            QCOMPARE(events[i].data["delta"]["type"].get<std::string>(), std::string("input_json_delta"));
            partial += events[i].data["delta"]["partial_json"].get<std::string>();
        }
        QCOMPARE(parse(partial)["city"].get<std::string>(), std::string("Paris"));
        QCOMPARE(events[events.size() - 2].data["delta"]["stop_reason"].get<std::string>(), std::string("tool_use"));
        // tool_choice none: the same text stays text.
        OJson none = parse(postJson(f.port, "/v1/messages", with(std::string(kTools) + R"(,"tool_choice":{"type":"none"})"))->body);
        QCOMPARE(none["content"][0]["type"].get<std::string>(), std::string("text"));
        QCOMPARE(none["stop_reason"].get<std::string>(), std::string("end_turn"));
        // tool_choice any / tool constrain the output to a call; auto leaves it free.
        QCOMPARE(postJson(f.port, "/v1/messages", with(std::string(kTools) + R"(,"tool_choice":{"type":"any"})"))->status, 200);
        QVERIFY(f.engine->lastRequest().grammar);
        QCOMPARE(postJson(f.port, "/v1/messages", with(std::string(kTools) + R"(,"tool_choice":{"type":"tool","name":"get_weather"})"))->status, 200);
        QVERIFY(f.engine->lastRequest().grammar);
        QCOMPARE(postJson(f.port, "/v1/messages", with(std::string(kTools) + R"(,"tool_choice":{"type":"auto"})"))->status, 200);
        QVERIFY(!f.engine->lastRequest().grammar);
        // A turn cut short inside a second call keeps the complete first one.
        f.engine->setReply(std::string(kToolReply) + "\n<tool_call>\n{\"name\": \"get_wea");
        for (const char* maxTokens : {"400", "64"}) { // cut inside the JSON, or inside the tag
            OJson cut = parse(postJson(f.port, "/v1/messages", "{\"max_tokens\":" + std::string(maxTokens) + "," + kHi + "," + kTools + "}")->body);
            QVERIFY2(cut["content"].size() == 1, cut.dump().c_str());
            QCOMPARE(cut["content"][0]["type"].get<std::string>(), std::string("tool_use"));
            QCOMPARE(cut["content"][0]["input"]["city"].get<std::string>(), std::string("Paris"));
            // Cut by the limit inside the tag: max_tokens, as Anthropic's; ended there: tool_use.
            QCOMPARE(cut["stop_reason"].get<std::string>(), std::string(maxTokens == std::string("64") ? "max_tokens" : "tool_use"));
        }
        // With tools but a plain answer, streaming still gives one text block.
        f.engine->setReply("Just text.");
        auto plain = namedEvents(postJson(f.port, "/v1/messages", with(std::string(kTools) + R"(,"stream":true)"))->body);
        int starts = 0;
        std::string plainText;
        for (const NamedEvent& e : plain) {
            if (e.name == "content_block_start") {
                ++starts;
                QCOMPARE(e.data["content_block"]["type"].get<std::string>(), std::string("text"));
            }
            if (e.name == "content_block_delta") plainText += e.data["delta"]["text"].get<std::string>();
        }
        QCOMPARE(starts, 1);
        QCOMPARE(plainText, std::string("Just text."));
        QCOMPARE(plain[plain.size() - 2].data["delta"]["stop_reason"].get<std::string>(), std::string("end_turn"));
        QCOMPARE(plain[2].data["content_block"]["type"].get<std::string>(), std::string("text"));
    }

    void thinkingBlocks() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<think>Pondering the sky.</think>It is blue.");
        OJson j = parse(postJson(f.port, "/v1/messages", kBody)->body);
        QCOMPARE(j["content"].size(), size_t(2));
        QCOMPARE(j["content"][0]["type"].get<std::string>(), std::string("thinking"));
        QCOMPARE(j["content"][0]["thinking"].get<std::string>(), std::string("Pondering the sky."));
        QCOMPARE(j["content"][1]["text"].get<std::string>(), std::string("It is blue."));
        auto events = namedEvents(postJson(f.port, "/v1/messages", with(R"("stream":true)"))->body);
        std::string thinking, text;
        std::vector<std::string> blocks;
        for (const NamedEvent& e : events) {
            if (e.name == "content_block_start") blocks.push_back(e.data["content_block"]["type"].get<std::string>());
            if (e.name != "content_block_delta") continue;
            const OJson& d = e.data["delta"];
            if (d["type"] == "thinking_delta") {
                thinking += d["thinking"].get<std::string>();
                QCOMPARE(e.data["index"].get<int>(), 0);
            } else {
                text += d["text"].get<std::string>();
                QCOMPARE(e.data["index"].get<int>(), 1);
            }
        }
        QCOMPARE(blocks, (std::vector<std::string>{"thinking", "text"}));
        QCOMPARE(thinking, std::string("Pondering the sky."));
        QCOMPARE(text, std::string("It is blue."));
        // Thinking blocks sent back in history are accepted and not shown to the model again.
        auto back = postJson(f.port, "/v1/messages", R"({"max_tokens":8,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"secret","signature":""},{"type":"text","text":"Blue."}]},{"role":"user","content":"why?"}]})");
        QCOMPARE(back->status, 200);
        auto prompt = f.engine->tokenizer().decode(f.engine->lastRequest().prompt);
        QVERIFY(prompt && prompt->find("secret") == std::string::npos && prompt->find("Blue.") != std::string::npos);
    }

    void apiKeyHeaders() {
        ServerConfig c;
        c.apiKey = "sekret";
        START_FAKE_SERVER(f, c);
        auto none = postJson(f.port, "/v1/messages", kBody);
        QCOMPARE(none->status, 401);
        QVERIFY(isAnthropicError(parse(none->body)));
        QCOMPARE(parse(none->body)["error"]["type"].get<std::string>(), std::string("authentication_error"));
        QCOMPARE(postJson(f.port, "/v1/messages", kBody, {{"x-api-key", "wrong"}})->status, 401);
        QCOMPARE(postJson(f.port, "/v1/messages", kBody, {{"x-api-key", "sekret"}})->status, 200);
        QCOMPARE(postJson(f.port, "/v1/messages", kBody, {{"Authorization", "Bearer sekret"}})->status, 200);
        // OpenAI paths keep their own error shape.
        auto oa = postJson(f.port, "/v1/chat/completions", "{" + kHi + "}");
        QCOMPARE(oa->status, 401);
        QVERIFY(isErrorShape(parse(oa->body)));
    }

    void engineErrorsInAnthropicShape() {
        START_FAKE_SERVER(f, ServerConfig{}, 64);
        auto big = postJson(f.port, "/v1/messages", "{\"max_tokens\":100000," + kHi + "}");
        QCOMPARE(big->status, 400);
        QVERIFY(isAnthropicError(parse(big->body)));
        f.engine->setMaxWaiting(0);
        auto busy = postJson(f.port, "/v1/messages", "{\"max_tokens\":4," + kHi + "}");
        QCOMPARE(busy->status, 429);
        QCOMPARE(parse(busy->body)["error"]["type"].get<std::string>(), std::string("rate_limit_error"));
        f.engine->setMaxWaiting(1 << 20);
        auto get = client(f.port).Get("/v1/messages");
        QCOMPARE(get->status, 405);
        QVERIFY(isAnthropicError(parse(get->body)));
        auto raise = postJson(f.port, "/v1/messages", R"({"max_tokens":5,"messages":[{"role":"user","content":"RAISE"}]})");
        QCOMPARE(raise->status, 400);
        QVERIFY(isAnthropicError(parse(raise->body)));
    }

    void cancelOnDisconnect() {
        START_FAKE_SERVER(f, ServerConfig{}, 1 << 20);
        VERIFY_DISCONNECT_CANCELS(f, "/v1/messages", "{\"stream\":true,\"max_tokens\":500000," + kHi + "}", 4000, kBody);
    }

    void hostileCorpusOverHttp() {
        START_FAKE_SERVER(f);
        int i = 0;
        for (const HostileApiBody& h : hostileApiBodies()) {
            if (h.api == NewApi::Responses) continue;
            auto r = postJson(f.port, newApiPath(h.api), h.body);
            const QString what = QStringLiteral("#%1 %2: %3").arg(i++).arg(newApiPath(h.api)).arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(r, qPrintable(what));
            QVERIFY2(r->status >= 400 && r->status < 500, qPrintable(what + " -> " + QString::number(r->status)));
            QVERIFY2(isAnthropicError(parse(r->body)), qPrintable(what + " -> " + QString::fromStdString(r->body.substr(0, 200))));
        }
        QCOMPARE(f.engine->submitted(), 0);
        QCOMPARE(postJson(f.port, "/v1/messages", kBody)->status, 200);
    }
};

QTEST_GUILESS_MAIN(TestServerAnthropic)
#include "test_server_anthropic.moc"
