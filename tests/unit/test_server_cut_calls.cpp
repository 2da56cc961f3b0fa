// A tool call cut short by the token limit (a model adding properties its schema allows until
// max_tokens) comes back as a tool call in every dialect, never as <tool_call> markup: OpenAI chat
// (whole and streamed: the arguments as far as written, finish_reason "length"), Ollama
// (arguments closed into an object, done_reason "length"), Anthropic (input closed into an
// object, stop_reason "max_tokens") and Responses (a function_call item, status "incomplete").
#include "../server/new_api_test_support.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::test;

namespace {

const std::string kCutCallReply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
                           "\"extra_1\": \"more words the schema allows\", \"extra_2\": \"and still more words\"}}\n"
                           "</tool_call>";
const std::string kCutCallTools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";

std::string cutCallChatBody(int maxTokens, bool stream = false) {
    return R"({"messages":[{"role":"user","content":"weather?"}],"max_tokens":)" + std::to_string(maxTokens) +
           (stream ? R"(,"stream":true,)" : ",") + kCutCallTools + "}";
}

bool parsesAsJson(const std::string& text) { return !OJson::parse(text, nullptr, false).is_discarded(); }

} // namespace

class TestServerCutCalls : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void cutCallIsACallInEveryDialect() {
        START_FAKE_SERVER(f);
        f.engine->setReply(kCutCallReply);
        // The whole reply's length in tokens, then a limit that ends inside extra_1's value.
        OJson whole = parse(postJson(f.port, "/v1/chat/completions", cutCallChatBody(400))->body);
        QCOMPARE(whole["choices"][0]["finish_reason"].get<std::string>(), std::string("tool_calls"));
        const int total = whole["usage"]["completion_tokens"].get<int>();
        int limit = 0;
        std::string args;
        for (int n = total - 1; n > 0 && !limit; --n) {
            OJson r = parse(postJson(f.port, "/v1/chat/completions", cutCallChatBody(n))->body);
            OJson& calls = r["choices"][0]["message"]["tool_calls"];
            if (!calls.is_array() || calls.empty()) continue;
            const std::string a = calls[0]["function"]["arguments"].get<std::string>();
            if (!parsesAsJson(a) && a.find("extra_1\": \"more") != std::string::npos &&
                a.find("extra_2") == std::string::npos) {
                limit = n;
                args = a;
                QCOMPARE(r["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
                QCOMPARE(calls[0]["function"]["name"].get<std::string>(), std::string("get_weather"));
                QVERIFY(r["choices"][0]["message"]["content"].is_null() ||
                        r["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>") == std::string::npos);
            }
        }
        QVERIFY2(limit > 0, "no limit cut the call inside extra_1");
        QVERIFY2(std::string(kCutCallReply).find(args) != std::string::npos, args.c_str()); // as far as written

        // Streamed: the same call in fragments, finish_reason length, no markup as content.
        const auto s = postJson(f.port, "/v1/chat/completions", cutCallChatBody(limit, true));
        std::string name, streamedArgs, reason;
        for (const std::string& d : sseData(s->body)) {
            if (d == "[DONE]") continue;
            OJson chunk = parse(d);
            OJson& ch = chunk["choices"][0];
            if (ch["delta"].contains("tool_calls")) {
                const OJson& fn = ch["delta"]["tool_calls"][0]["function"];
                if (fn.contains("name")) name = fn["name"].get<std::string>();
                if (fn.contains("arguments")) streamedArgs += fn["arguments"].get<std::string>();
            }
            if (ch["finish_reason"].is_string()) reason = ch["finish_reason"].get<std::string>();
        }
        QCOMPARE(name, std::string("get_weather"));
        QCOMPARE(reason, std::string("length"));
        QVERIFY2(streamedText(s->body).find("<tool_call>") == std::string::npos, streamedText(s->body).c_str());
        QVERIFY2(std::string(kCutCallReply).find(streamedArgs) != std::string::npos, streamedArgs.c_str());

        // Ollama: the arguments closed into an object as far as they go.
        OJson o = parse(postJson(f.port, "/api/chat",
                                       R"({"stream":false,"messages":[{"role":"user","content":"weather?"}],"options":{"num_predict":)" +
                                           std::to_string(limit) + "}," + kCutCallTools + "}")
                                  ->body);
        QCOMPARE(o["done_reason"].get<std::string>(), std::string("length"));
        QVERIFY2(o["message"]["tool_calls"].is_array(), o.dump().c_str());
        OJson& oa = o["message"]["tool_calls"][0]["function"]["arguments"];
        QCOMPARE(oa["city"].get<std::string>(), std::string("Paris"));
        QVERIFY(oa["extra_1"].get<std::string>().rfind("more", 0) == 0);
        QVERIFY(o["message"]["content"].get<std::string>().find("<tool_call>") == std::string::npos);

        // Anthropic: a tool_use block whose input is closed likewise; stop_reason max_tokens.
        OJson a = parse(postJson(f.port, "/v1/messages",
                                       R"({"model":"m","max_tokens":)" + std::to_string(limit) +
                                           R"(,"messages":[{"role":"user","content":"weather?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]})")
                                  ->body);
        QCOMPARE(a["stop_reason"].get<std::string>(), std::string("max_tokens"));
        bool toolUse = false;
        for (OJson& b : a["content"]) {
            if (b["type"] == "text") QVERIFY(b["text"].get<std::string>().find("<tool_call>") == std::string::npos);
            if (b["type"] != "tool_use") continue;
            toolUse = true;
            QCOMPARE(b["input"]["city"].get<std::string>(), std::string("Paris"));
        }
        QVERIFY2(toolUse, a.dump().c_str());

        // Responses: a function_call item with the arguments as written; the response incomplete.
        OJson r = parse(postJson(f.port, "/v1/responses",
                                       R"({"model":"m","input":"weather?","max_output_tokens":)" + std::to_string(limit) +
                                           R"(,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]})")
                                  ->body);
        QCOMPARE(r["status"].get<std::string>(), std::string("incomplete"));
        bool call = false;
        for (OJson& item : r["output"]) {
            if (item["type"] == "message")
                for (const OJson& part : item["content"])
                    QVERIFY(part.value("text", std::string()).find("<tool_call>") == std::string::npos);
            if (item["type"] != "function_call") continue;
            call = true;
            QCOMPARE(item["name"].get<std::string>(), std::string("get_weather"));
            QCOMPARE(item["status"].get<std::string>(), std::string("incomplete")); // the call it cut
            QVERIFY(std::string(kCutCallReply).find(item["arguments"].get<std::string>()) != std::string::npos);
        }
        QVERIFY2(call, r.dump().c_str());
    }

    // Partial arguments closed into objects: the longest prefix that ends a value.
    void closingPartialArguments() {
        using server::closedJsonObject;
        const std::pair<std::string, std::string> cases[] = {
            {"{\"city\": \"Par", "{\"city\":\"Par\"}"},
            {"{\"a\": 1, \"ext", "{\"a\":1}"},
            {"{\"a\": [1, {\"b\": tr", "{\"a\":[1,{}]}"},
            {"{\"a\": {\"b\": \"c\"}, \"d\": 12", "{\"a\":{\"b\":\"c\"},\"d\":12}"},
            {"{\"q\": \"say \\\"hi", "{\"q\":\"say \\\"hi\"}"},
            {"{\"a\": 1}", "{\"a\":1}"},
            {"", "{}"},
            {"not json", "{}"},
            {"[1, 2", "{}"},
        };
        for (const auto& [in, out] : cases) QCOMPARE(closedJsonObject(in), out); // "[1, 2": not an object
    }
};

QTEST_MAIN(TestServerCutCalls)
#include "test_server_cut_calls.moc"
