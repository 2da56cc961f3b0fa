// Tests of the stateless OpenAI Responses API (/v1/responses): parsing of input items,
// instructions, tools, text.format and the refusals of stateful fields, then over real HTTP with a
// fake engine: whole and streamed responses with the exact event sequence, function calls,
// incomplete responses at max_output_tokens, usage, cancel on disconnect, and a hostile corpus.
#include "../server/hostile_anthropic.h"
#include "../server/new_api_test_support.h"

#include "server/responses_request.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::test;
using namespace hearth::server;

namespace {

const std::string kBody = "{\"model\":\"gpt-x\",\"input\":\"hi\"}";

ResponsesRequest parsedOk(const std::string& body) {
    auto r = parseResponsesRequest(body, ParseLimits{});
    if (!r) qWarning("unexpected error: %s", r.error().message.c_str());
    return r ? *r : ResponsesRequest{};
}

ApiError parsedErr(const std::string& body) {
    auto r = parseResponsesRequest(body, ParseLimits{});
    return r ? ApiError{0, "parsed"} : r.error();
}

std::string with(const std::string& fields) { return "{\"input\":\"hi\"," + fields + "}"; }

const char* kToolReply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const char* kTools = R"("tools":[{"type":"function","name":"get_weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}])";

} // namespace

class TestServerResponses : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesEveryField() {
        const std::string body = R"({"model":"gpt-x","instructions":"Be brief.","max_output_tokens":50,
            "temperature":0.5,"top_p":0.9,"stream":true,"store":false,"user":"u","metadata":{"k":"v"},
            "parallel_tool_calls":false,"reasoning":{"effort":"low","summary":"auto"},"truncation":"disabled",
            "input":[{"role":"developer","content":"Use tools."},
                     {"type":"message","role":"user","content":[{"type":"input_text","text":"weather"},{"type":"input_text","text":"in Paris?"}]},
                     {"type":"reasoning","id":"rs_1","summary":[]},
                     {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
                     {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"[42]"},
                     {"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"not json"},
                     {"type":"function_call_output","call_id":"call_1","output":"sunny"},
                     {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"rainy"}]}],
            "tools":[{"type":"function","name":"get_weather","description":"Weather now","parameters":{"type":"object"},"strict":true}],
            "tool_choice":{"type":"function","name":"get_weather"},
            "text":{"format":{"type":"text"}}})";
        ResponsesRequest r = parsedOk(body);
        const CommonParams& p = r.chat.common;
        QCOMPARE(p.model, std::string("gpt-x"));
        QCOMPARE(*p.maxTokens, 50);
        QCOMPARE(p.temperature, 0.5f);
        QCOMPARE(p.topP, 0.9f);
        QVERIFY(p.stream);
        const OJson& m = r.chat.messages;
        QCOMPARE(m.size(), size_t(6));
        QCOMPARE(m[0]["role"].get<std::string>(), std::string("system"));
        QCOMPARE(m[0]["content"].get<std::string>(), std::string("Be brief."));
        QCOMPARE(m[1]["role"].get<std::string>(), std::string("developer"));
        QCOMPARE(m[2]["content"].get<std::string>(), std::string("weather\nin Paris?"));
        QCOMPARE(m[3]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(m[3]["content"].get<std::string>(), std::string("Checking."));
        QCOMPARE(m[3]["tool_calls"].size(), size_t(2));
        QCOMPARE(m[3]["tool_calls"][0]["id"].get<std::string>(), std::string("call_1"));
        QCOMPARE(m[3]["tool_calls"][0]["function"]["arguments"][0].get<int>(), 42); // JSON text parsed
        QCOMPARE(m[3]["tool_calls"][1]["function"]["arguments"].get<std::string>(), std::string("not json"));
        QCOMPARE(m[4]["role"].get<std::string>(), std::string("tool"));
        QCOMPARE(m[4]["tool_call_id"].get<std::string>(), std::string("call_1"));
        QCOMPARE(m[5]["content"].get<std::string>(), std::string("rainy"));
        QCOMPARE(r.chat.tools.size(), size_t(1));
        QVERIFY(r.chat.toolChoice.mode == ToolChoiceMode::Named);
        QCOMPARE(r.echo["instructions"].get<std::string>(), std::string("Be brief."));
        QCOMPARE(r.echo["max_output_tokens"].get<int>(), 50);
        QCOMPARE(r.echo["tools"][0]["name"].get<std::string>(), std::string("get_weather"));
        QCOMPARE(r.echo["tools"][0]["strict"].get<bool>(), true);
        QCOMPARE(r.echo["metadata"]["k"].get<std::string>(), std::string("v"));
        QCOMPARE(r.echo["parallel_tool_calls"].get<bool>(), false);
        QVERIFY(!r.chat.toolChoice.parallel);
        QVERIFY(parsedOk(kBody).chat.toolChoice.parallel); // OpenAI's default
        QVERIFY(r.chat.common.responseFormat.kind == ResponseFormat::Kind::Text);
        QCOMPARE(r.chat.templateKwargs["reasoning_effort"].get<std::string>(), std::string("low"));
        QCOMPARE(r.echo["reasoning"]["effort"].get<std::string>(), std::string("low"));
        QCOMPARE(parsedErr(with(R"("reasoning":{"effort":"max"})")).param, std::string("reasoning.effort"));
        QCOMPARE(parsedErr(with(R"("reasoning":"high")")).param, std::string("reasoning"));
        // A lone function call opens an assistant turn of its own.
        ResponsesRequest lone = parsedOk(R"({"input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]})");
        QVERIFY(lone.chat.messages[1]["content"].is_null());
        QCOMPARE(lone.chat.messages[1]["tool_calls"].size(), size_t(1));
        // Formats parse (whether the server can honour them is the handler's business).
        QVERIFY(parsedOk(with(R"("text":{"format":{"type":"json_object"}})")).chat.common.responseFormat.kind == ResponseFormat::Kind::JsonObject);
        ResponsesRequest js = parsedOk(with(R"("text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"},"strict":true}})"));
        const ResponseFormat& rf = js.chat.common.responseFormat;
        QVERIFY(rf.kind == ResponseFormat::Kind::JsonSchema);
        QCOMPARE(rf.name, std::string("w"));
        QCOMPARE(rf.schema["type"].get<std::string>(), std::string("object"));
    }

    void refusesWhatNeedsState() {
        const char* fields[] = {R"("previous_response_id":"resp_1")", R"("store":true)",
                                R"("background":true)", R"("conversation":"c")"};
        const char* params[] = {"previous_response_id", "store", "background", "conversation"};
        for (int i = 0; i < 4; ++i) {
            const ApiError e = parsedErr(with(fields[i]));
            QCOMPARE(e.status, 400);
            QCOMPARE(e.param, std::string(params[i]));
            QVERIFY2(e.message.find("keeps no state") != std::string::npos, e.message.c_str());
        }
        QCOMPARE(parsedErr(with(R"("store":false,"background":false)")).status, 0);
        QCOMPARE(parsedErr(R"({"input":[{"type":"item_reference","id":"msg_1"}]})").param, std::string("input[0].type"));
    }

    void badFieldsNameThemselves() {
        struct Case { std::string body; std::string param; };
        const Case cases[] = {
            {R"({"model":"m"})", "input"},
            {with(R"("tools":[{"type":"web_search"}])"), "tools[0].type"},
            {with(R"("tools":[{"type":"file_search"}])"), "tools[0].type"},
            {with(R"("max_output_tokens":0)"), "max_output_tokens"},
            {with(R"("temperature":3)"), "temperature"},
            {with(R"("instructions":5)"), "instructions"},
            {with(R"("text":{"format":{"type":"yaml"}})"), "text.format.type"},
            {with(R"("text":{"format":{"type":"json_schema","name":"x"}})"), "text.format.schema"},
            {with(R"("tool_choice":"required")"), "tool_choice"},
            {R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})", "input[0].content[0].image_url"},
            {R"({"input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]})", "input[0].content[0].file_id"},
            {R"({"input":[{"role":"assistant","content":[{"type":"input_image","image_url":"x"}]}]})", "input[0].content[0].type"},
            {R"({"input":[{"type":"function_call","call_id":"c","name":"f"}]})", "input[0].arguments"},
            {R"({"input":[{"type":"function_call_output","call_id":"c"}]})", "input[0].output"},
        };
        for (const Case& c : cases) {
            const ApiError e = parsedErr(c.body);
            QVERIFY2(e.status == 400, c.body.c_str());
            QCOMPARE(e.param, c.param);
        }
        QVERIFY(parsedErr(with(R"("tools":[{"type":"web_search"}])")).message.find("not supported") != std::string::npos);
    }

    void hostileCorpusParses() {
        int i = 0;
        for (const HostileApiBody& h : hostileApiBodies()) {
            if (h.api != NewApi::Responses) continue;
            const ApiError e = parsedErr(h.body);
            const QString what = QStringLiteral("#%1: %2").arg(i++).arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(e.status >= 400 && e.status < 500, qPrintable(what));
        }
        QCOMPARE(parsedErr(kBody).status, 0); // negative control
    }

    void wholeResponse() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/responses", with(R"("instructions":"Be brief.","metadata":{"k":"v"})"));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        OJson j = parse(r->body);
        QVERIFY(j["id"].get<std::string>().rfind("resp_", 0) == 0);
        QCOMPARE(j["object"].get<std::string>(), std::string("response"));
        QVERIFY(j["created_at"].get<int64_t>() > 1600000000);
        QCOMPARE(j["status"].get<std::string>(), std::string("completed"));
        QCOMPARE(j["model"].get<std::string>(), std::string("fake-model"));
        QCOMPARE(j["instructions"].get<std::string>(), std::string("Be brief."));
        QCOMPARE(j["metadata"]["k"].get<std::string>(), std::string("v"));
        QCOMPARE(j["store"].get<bool>(), false);
        QCOMPARE(j["output"].size(), size_t(1));
        const OJson& item = j["output"][0];
        QCOMPARE(item["type"].get<std::string>(), std::string("message"));
        QCOMPARE(item["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(item["status"].get<std::string>(), std::string("completed"));
        QCOMPARE(item["content"][0]["type"].get<std::string>(), std::string("output_text"));
        QCOMPARE(item["content"][0]["text"].get<std::string>(), std::string("Hello there, friend."));
        const GenerationRequest g = f.engine->lastRequest();
        QCOMPARE(j["usage"]["input_tokens"].get<int>(), int(g.prompt.size()));
        QVERIFY(j["usage"]["output_tokens"].get<int>() > 0);
        QCOMPARE(j["usage"]["total_tokens"].get<int>(), j["usage"]["input_tokens"].get<int>() + j["usage"]["output_tokens"].get<int>());
        auto text = f.engine->tokenizer().decode(g.prompt);
        QVERIFY(text && text->find("system: Be brief.\nuser: hi\nassistant:") != std::string::npos);
        // max_output_tokens: incomplete.
        OJson cut = parse(postJson(f.port, "/v1/responses", with(R"("max_output_tokens":2,"temperature":0.25,"top_p":0.5)"))->body);
        QCOMPARE(cut["status"].get<std::string>(), std::string("incomplete"));
        QCOMPARE(cut["incomplete_details"]["reason"].get<std::string>(), std::string("max_output_tokens"));
        QCOMPARE(cut["output"].back()["status"].get<std::string>(), std::string("incomplete")); // the message it cut
        QCOMPARE(cut["usage"]["output_tokens"].get<int>(), 2);
        QCOMPARE(f.engine->lastRequest().sampling.temperature, 0.25f);
        QCOMPARE(f.engine->lastRequest().sampling.topP, 0.5f);
        QCOMPARE(f.engine->lastRequest().maxTokens, 2);
        // Stateful requests: 400 in OpenAI's shape, nothing submitted.
        const int before = f.engine->submitted();
        auto prev = postJson(f.port, "/v1/responses", with(R"("previous_response_id":"resp_x")"));
        QCOMPARE(prev->status, 400);
        QVERIFY(isErrorShape(parse(prev->body)));
        QCOMPARE(f.engine->submitted(), before);
    }

    void structuredOutputGrammars() {
        START_FAKE_SERVER(f);
        // Free text: no grammar.
        QCOMPARE(postJson(f.port, "/v1/responses", with(R"("text":{"format":{"type":"text"}})"))->status, 200);
        QVERIFY(!f.engine->lastRequest().grammar);
        // json_object and json_schema reach the engine as a grammar.
        QCOMPARE(postJson(f.port, "/v1/responses", with(R"("text":{"format":{"type":"json_object"}})"))->status, 200);
        QVERIFY(f.engine->lastRequest().grammar);
        const std::string schema = R"("text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})";
        auto ok = postJson(f.port, "/v1/responses", with(schema));
        QCOMPARE(ok->status, 200);
        QVERIFY(f.engine->lastRequest().grammar);
        QCOMPARE(parse(ok->body)["text"]["format"]["name"].get<std::string>(), std::string("w"));
        // A keyword no grammar enforces: left out, or, with strict, a 400 naming the part.
        QCOMPARE(postJson(f.port, "/v1/responses", with(R"("text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object","properties":{"n":{"type":"number","multipleOf":3}}}}})"))->status,
                 200);
        const int before = f.engine->submitted();
        auto bad = postJson(f.port, "/v1/responses", with(R"("text":{"format":{"type":"json_schema","name":"w","strict":true,"schema":{"type":"object","properties":{"n":{"type":"number","multipleOf":3}}}}})"));
        QCOMPARE(bad->status, 400);
        OJson e = parse(bad->body);
        QVERIFY(isErrorShape(e));
        QCOMPARE(e["error"]["param"].get<std::string>(), std::string("text.format.schema"));
        QVERIFY2(e["error"]["message"].get<std::string>().find("/properties/n/multipleOf") != std::string::npos,
                 e["error"]["message"].get<std::string>().c_str());
        QCOMPARE(f.engine->submitted(), before);
        // A required tool call is constrained too; it cannot also follow a format.
        QCOMPARE(postJson(f.port, "/v1/responses", with(std::string(kTools) + R"(,"tool_choice":"required")"))->status, 200);
        QVERIFY(f.engine->lastRequest().grammar);
        QCOMPARE(postJson(f.port, "/v1/responses", with(std::string(kTools) + R"(,"tool_choice":"auto")"))->status, 200);
        QVERIFY(!f.engine->lastRequest().grammar);
        auto both = postJson(f.port, "/v1/responses", with(std::string(kTools) + R"(,"tool_choice":"required",)" + schema));
        QCOMPARE(both->status, 400);
        QCOMPARE(parse(both->body)["error"]["param"].get<std::string>(), std::string("tool_choice"));
    }

    void streamedResponse() {
        START_FAKE_SERVER(f);
        auto r = postJson(f.port, "/v1/responses", with(R"("stream":true)"));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->get_header_value("Content-Type").find("text/event-stream") == 0);
        auto events = namedEvents(r->body);
        auto names = eventNames(events);
        QVERIFY(names.size() >= 9);
        const std::vector<std::string> head = {"response.created", "response.in_progress",
                                               "response.output_item.added", "response.content_part.added"};
        const std::vector<std::string> tail = {"response.output_text.done", "response.content_part.done",
                                               "response.output_item.done", "response.completed"};
        QCOMPARE(std::vector<std::string>(names.begin(), names.begin() + 4), head);
        QCOMPARE(std::vector<std::string>(names.end() - 4, names.end()), tail);
        std::string text;
        for (size_t i = 4; i + 4 < names.size(); ++i) {
            QCOMPARE(names[i], std::string("response.output_text.delta"));
            text += events[i].data["delta"].get<std::string>();
        }
        QCOMPARE(text, std::string("Hello there, friend."));
        for (size_t i = 0; i < events.size(); ++i) {
            QCOMPARE(events[i].data["type"].get<std::string>(), names[i]);
            QCOMPARE(events[i].data["sequence_number"].get<size_t>(), i);
        }
        QCOMPARE(events[0].data["response"]["status"].get<std::string>(), std::string("in_progress"));
        QVERIFY(events[0].data["response"]["output"].empty());
        const std::string itemId = events[2].data["item"]["id"].get<std::string>();
        QCOMPARE(events[4].data["item_id"].get<std::string>(), itemId);
        QCOMPARE(events[names.size() - 4].data["text"].get<std::string>(), text);
        const OJson& done = events.back().data["response"];
        QCOMPARE(done["status"].get<std::string>(), std::string("completed"));
        QCOMPARE(done["output"][0]["content"][0]["text"].get<std::string>(), text);
        QVERIFY(done["usage"]["output_tokens"].get<int>() > 0);
        QCOMPARE(done["id"], events[0].data["response"]["id"]);
        // Cut by max_output_tokens: the stream ends with response.incomplete.
        auto cut = namedEvents(postJson(f.port, "/v1/responses", with(R"("stream":true,"max_output_tokens":2)"))->body);
        QCOMPARE(cut.back().name, std::string("response.incomplete"));
        QCOMPARE(cut.back().data["response"]["incomplete_details"]["reason"].get<std::string>(), std::string("max_output_tokens"));
        QCOMPARE(cut.back().data["response"]["output"].back()["status"].get<std::string>(), std::string("incomplete"));
        QCOMPARE(cut[cut.size() - 2].name, std::string("response.output_item.done"));
        QCOMPARE(cut[cut.size() - 2].data["item"]["status"].get<std::string>(), std::string("incomplete"));
    }

    void functionCalls() {
        START_FAKE_SERVER(f);
        f.engine->setReply(kToolReply);
        OJson j = parse(postJson(f.port, "/v1/responses", with(kTools))->body);
        QCOMPARE(j["output"].size(), size_t(1));
        const OJson& call = j["output"][0];
        QCOMPARE(call["type"].get<std::string>(), std::string("function_call"));
        QVERIFY(call["id"].get<std::string>().rfind("fc_", 0) == 0);
        QVERIFY(call["call_id"].get<std::string>().rfind("call_", 0) == 0);
        QCOMPARE(call["name"].get<std::string>(), std::string("get_weather"));
        QVERIFY(call["arguments"].is_string());
        QCOMPARE(parse(call["arguments"].get<std::string>())["city"].get<std::string>(), std::string("Paris"));
        QCOMPARE(j["tools"][0]["name"].get<std::string>(), std::string("get_weather"));
        auto events = namedEvents(postJson(f.port, "/v1/responses", with(std::string(kTools) + R"(,"stream":true)"))->body);
        auto names = eventNames(events);
        const std::vector<std::string> head = {"response.created", "response.in_progress", "response.output_item.added"};
        const std::vector<std::string> tail = {"response.function_call_arguments.done", "response.output_item.done",
                                               "response.completed"};
        QVERIFY(names.size() >= 7);
        QCOMPARE(std::vector<std::string>(names.begin(), names.begin() + 3), head);
        QCOMPARE(std::vector<std::string>(names.end() - 3, names.end()), tail);
        QCOMPARE(events[2].data["item"]["type"].get<std::string>(), std::string("function_call"));
        QCOMPARE(events[2].data["item"]["name"].get<std::string>(), std::string("get_weather"));
        QCOMPARE(events[2].data["item"]["arguments"].get<std::string>(), std::string(""));
        std::string args;
        for (size_t i = 3; i + 3 < events.size(); ++i) {
            QCOMPARE(names[i], std::string("response.function_call_arguments.delta"));
            args += events[i].data["delta"].get<std::string>();
        }
        QCOMPARE(events[events.size() - 3].data["arguments"].get<std::string>(), args);
        QCOMPARE(parse(args)["city"].get<std::string>(), std::string("Paris"));
        const OJson& item = events.back().data["response"]["output"][0];
        QCOMPARE(item["name"].get<std::string>(), std::string("get_weather"));
        QCOMPARE(item["arguments"].get<std::string>(), args);
        QCOMPARE(item["call_id"], events[2].data["item"]["call_id"]);
        // tool_choice none leaves the text as a message.
        OJson none = parse(postJson(f.port, "/v1/responses", with(std::string(kTools) + R"(,"tool_choice":"none")"))->body);
        QCOMPARE(none["output"][0]["type"].get<std::string>(), std::string("message"));
    }

    void reasoningItems() {
        START_FAKE_SERVER(f);
        f.engine->setReply("<think>Pondering the sky.</think>It is blue.");
        OJson j = parse(postJson(f.port, "/v1/responses", kBody)->body);
        QCOMPARE(j["output"].size(), size_t(2));
        QCOMPARE(j["output"][0]["type"].get<std::string>(), std::string("reasoning"));
        QCOMPARE(j["output"][0]["content"][0]["text"].get<std::string>(), std::string("Pondering the sky."));
        QCOMPARE(j["output"][1]["content"][0]["text"].get<std::string>(), std::string("It is blue."));
        auto events = namedEvents(postJson(f.port, "/v1/responses", with(R"("stream":true)"))->body);
        std::string reasoning, text;
        std::vector<std::string> added;
        for (const NamedEvent& e : events) {
            if (e.name == "response.output_item.added") added.push_back(e.data["item"]["type"].get<std::string>());
            if (e.name == "response.reasoning_text.delta") reasoning += e.data["delta"].get<std::string>();
            if (e.name == "response.output_text.delta") {
                text += e.data["delta"].get<std::string>();
                QCOMPARE(e.data["output_index"].get<int>(), 1);
            }
        }
        QCOMPARE(added, (std::vector<std::string>{"reasoning", "message"}));
        QCOMPARE(reasoning, std::string("Pondering the sky."));
        QCOMPARE(text, std::string("It is blue."));
        QCOMPARE(events.back().data["response"]["output"].size(), size_t(2));
    }

    void cancelOnDisconnect() {
        START_FAKE_SERVER(f, ServerConfig{}, 1 << 20);
        VERIFY_DISCONNECT_CANCELS(f, "/v1/responses", R"({"input":"hi","stream":true,"max_output_tokens":500000})", 6000, kBody);
    }

    void hostileCorpusOverHttp() {
        START_FAKE_SERVER(f);
        int i = 0;
        for (const HostileApiBody& h : hostileApiBodies()) {
            if (h.api != NewApi::Responses) continue;
            auto r = postJson(f.port, "/v1/responses", h.body);
            const QString what = QStringLiteral("#%1: %2").arg(i++).arg(QString::fromUtf8(h.body.substr(0, 120).c_str()));
            QVERIFY2(r, qPrintable(what));
            QVERIFY2(r->status >= 400 && r->status < 500, qPrintable(what + " -> " + QString::number(r->status)));
            QVERIFY2(isErrorShape(parse(r->body)), qPrintable(what));
        }
        QCOMPARE(f.engine->submitted(), 0);
        QCOMPARE(postJson(f.port, "/v1/responses", kBody)->status, 200);
    }
};

QTEST_GUILESS_MAIN(TestServerResponses)
#include "test_server_responses.moc"
