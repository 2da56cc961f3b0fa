// Tests of structured output and streaming helpers without HTTP: response_format / grammar /
// reasoning parameters, the grammars they compile to (checked with matchText), forced tool-call
// grammars per call style, tool calls read while streaming, and the <think> splitter.
#include "hearth/grammar.h"
#include "server/openai_request.h"
#include "hearth/chat_output.h"
#include "server/structured_output.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::server;
using grammar::TextMatch;
using OJson = nlohmann::ordered_json;

namespace {

const std::string kHi = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

ApiResult<ChatCompletionRequest> chat(const std::string& extra) {
    return parseChatCompletionRequest("{" + kHi + "," + extra + "}");
}

// Feeds `text` one byte at a time (the worst split) and gathers the deltas.
std::vector<ToolCallDelta> streamCalls(const std::string& text, std::vector<std::string> names = {}) {
    ToolCallStreamer s(std::move(names));
    std::vector<ToolCallDelta> all;
    for (char c : text)
        for (ToolCallDelta& d : s.push(std::string(1, c))) all.push_back(std::move(d));
    return all;
}

// Per call index: name and concatenated arguments.
std::map<int, std::pair<std::string, std::string>> assemble(const std::vector<ToolCallDelta>& deltas) {
    std::map<int, std::pair<std::string, std::string>> calls;
    for (const ToolCallDelta& d : deltas) {
        if (!d.id.empty()) {
            if (calls.count(d.index)) qWarning("call %d announced twice", d.index);
            calls[d.index].first = d.name;
        } else if (!calls.count(d.index)) {
            qWarning("arguments before the call was announced");
        }
        calls[d.index].second += d.arguments;
    }
    return calls;
}

std::map<int, std::pair<std::string, std::string>> assemble(const std::vector<tmpl::OutputCall>& calls) {
    std::vector<ToolCallDelta> deltas;
    for (const tmpl::OutputCall& c : calls) deltas.push_back({c.index, c.name.empty() ? "" : "id", c.name, c.arguments});
    return assemble(deltas);
}

tmpl::ReasoningPiece splitBytewise(const std::string& text, bool inside = false) {
    tmpl::ReasoningSplitter s(inside);
    tmpl::ReasoningPiece all;
    for (char c : text) {
        tmpl::ReasoningPiece p = s.push(std::string(1, c));
        all.reasoning += p.reasoning;
        all.content += p.content;
    }
    tmpl::ReasoningPiece p = s.finish();
    all.reasoning += p.reasoning;
    all.content += p.content;
    return all;
}

std::vector<ToolFunction> weatherTools() {
    ToolFunction w;
    w.name = "get_weather";
    w.parameters = OJson::parse("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}, \"unit\":{\"enum\":[\"c\",\"f\"]}},\"required\":[\"city\"],\"additionalProperties\":false}");
    ToolFunction t;
    t.name = "get_time";
    t.parameters = OJson::parse("{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":\"string\"}},\"required\":[\"zone\"], \"additionalProperties\":false}");
    return {w, t};
}

} // namespace

class TestServerStructured : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void responseFormatParses() {
        auto text = chat("\"response_format\":{\"type\":\"text\"}");
        QVERIFY(text.isOk());
        QCOMPARE(int(text->common.responseFormat.kind), int(ResponseFormat::Kind::Text));
        auto obj = chat("\"response_format\":{\"type\":\"json_object\"}");
        QVERIFY(obj.isOk());
        QCOMPARE(int(obj->common.responseFormat.kind), int(ResponseFormat::Kind::JsonObject));
        auto schema = chat("\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\","
                           "\"strict\":true,\"schema\":{\"type\":\"integer\"}}}");
        QVERIFY(schema.isOk());
        QCOMPARE(int(schema->common.responseFormat.kind), int(ResponseFormat::Kind::JsonSchema));
        QCOMPARE(schema->common.responseFormat.schema.dump(), std::string("{\"type\":\"integer\"}"));
        auto gbnf = chat("\"grammar\":\"root ::= \\\"a\\\"\"");
        QVERIFY(gbnf.isOk());
        QCOMPARE(gbnf->common.grammar, std::string("root ::= \"a\""));

        const char* bad[] = {
            "\"response_format\":{\"type\":\"xml\"}",
            "\"response_format\":{\"type\":\"json_schema\"}",
            "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":5}}",
            "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{},\"strict\":\"yes\"}}",
            "\"response_format\":\"json\"",
            "\"grammar\":5",
            "\"grammar\":\"root ::= \\\"a\\\"\",\"response_format\":{\"type\":\"json_object\"}",
            "\"json_schema\":{},\"response_format\":{\"type\":\"json_object\"}",
            "\"reasoning_format\":\"weird\"",
            "\"reasoning_effort\":\"max\"",
            "\"reasoning_effort\":1",
        };
        for (const char* b : bad) {
            auto r = chat(b);
            QVERIFY2(!r.isOk(), b);
            QCOMPARE(r.error().status, 400);
        }
        auto effort = chat("\"reasoning_effort\":\"low\"");
        QVERIFY(effort.isOk());
        QCOMPARE(effort->templateKwargs["reasoning_effort"].get<std::string>(), std::string("low"));
        auto none = chat("\"reasoning_format\":\"none\"");
        QVERIFY(none.isOk());
        QVERIFY(!none->splitReasoning);
    }

    void outputGrammarsMatchWhatTheyShould() {
        CommonParams p;
        auto free = outputGrammar(p);
        QVERIFY(free.isOk());
        QVERIFY(!*free);
        p.responseFormat.kind = ResponseFormat::Kind::JsonObject;
        auto obj = outputGrammar(p);
        QVERIFY(obj.isOk() && *obj);
        QCOMPARE(grammar::matchText(**obj, "{\"a\": [1, {\"b\": null}]}"), TextMatch::Complete);
        QVERIFY(grammar::matchText(**obj, "[1]") == TextMatch::Rejected);
        p.responseFormat.kind = ResponseFormat::Kind::JsonSchema;
        p.responseFormat.schema = OJson::parse("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}, \"required\":[\"n\"],\"additionalProperties\":false}");
        auto sch = outputGrammar(p);
        QVERIFY(sch.isOk() && *sch);
        QVERIFY(grammar::matchText(**sch, "{\"n\":42}") == TextMatch::Complete ||
                grammar::matchText(**sch, "{\"n\": 42}") == TextMatch::Complete);
        QCOMPARE(grammar::matchText(**sch, "{\"n\":\"x\"}"), TextMatch::Rejected);
        p.responseFormat.schema = OJson::parse("{\"type\":\"integer\",\"multipleOf\":3}");
        auto loose = outputGrammar(p); // multipleOf left out: any integer
        QVERIFY(loose.isOk() && *loose);
        QCOMPARE(grammar::matchText(**loose, "4"), TextMatch::Complete);
        p.responseFormat.strict = true; // the client wants every keyword enforced: refused
        auto unsupported = outputGrammar(p);
        QVERIFY(!unsupported.isOk());
        QCOMPARE(unsupported.error().param, std::string("response_format"));
        QVERIFY2(unsupported.error().message.find("multipleOf") != std::string::npos,
                 unsupported.error().message.c_str());
        CommonParams g;
        g.grammar = "root ::= \"yes\" | \"no\"";
        auto yes = outputGrammar(g);
        QVERIFY(yes.isOk() && *yes);
        QCOMPARE(grammar::matchText(**yes, "no"), TextMatch::Complete);
        g.grammar = "root ::= undefined-rule";
        auto broken = outputGrammar(g);
        QVERIFY(!broken.isOk());
        QCOMPARE(broken.error().param, std::string("grammar"));
        QVERIFY(broken.error().message.find("undefined-rule") != std::string::npos);
    }

    // Hostile schemas are refused or compile to a bounded grammar, quickly.
    void hostileSchemasAreBounded() {
        std::vector<std::pair<std::string, OJson>> cases;
        OJson deep = {{"type", "integer"}};
        for (int i = 0; i < 200; ++i) deep = {{"type", "object"}, {"properties", {{"a", deep}}}, {"required", {"a"}}};
        cases.push_back({"200 nested objects", deep});
        OJson hugeEnum = OJson::array();
        for (int i = 0; i < 100000; ++i) hugeEnum.push_back("value-" + std::to_string(i));
        cases.push_back({"an enum of 100000 strings", {{"enum", hugeEnum}}});
        cases.push_back({"a nested quantifier pattern", {{"type", "string"}, {"pattern", "^(a+)+$"}}});
        cases.push_back({"a nested star pattern", {{"type", "string"}, {"pattern", "^((a*)*)*b$"}}});
        cases.push_back({"a quantified group of quantified groups",
                         {{"type", "string"}, {"pattern", "^((a{1,100}){1,100}){1,100}$"}}});
        cases.push_back({"a $ref cycle", OJson::parse("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},"
                                                      "\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}")});
        cases.push_back({"a dangling $ref", {{"$ref", "#/$defs/missing"}}});
        cases.push_back({"a remote $ref", {{"$ref", "https://example.com/schema.json"}}});
        cases.push_back({"maxLength 10^9", {{"type", "string"}, {"maxLength", 1000000000}}});
        cases.push_back({"minItems 10^6", {{"type", "array"}, {"minItems", 1000000}}});
        cases.push_back({"minLength > maxLength", {{"type", "string"}, {"minLength", 5}, {"maxLength", 2}}});
        OJson many = OJson::object();
        for (int i = 0; i < 20000; ++i) many["p" + std::to_string(i)] = {{"type", "boolean"}};
        cases.push_back({"20000 properties", {{"type", "object"}, {"properties", many}}});
        for (const auto& [what, schema] : cases) {
            QElapsedTimer timer;
            timer.start();
            CommonParams p;
            p.responseFormat.kind = ResponseFormat::Kind::JsonSchema;
            p.responseFormat.schema = schema;
            auto g = outputGrammar(p);
            const qint64 ms = timer.elapsed();
            qInfo("%s: %s in %lld ms", what.c_str(), g.isOk() ? "compiled" : g.error().message.substr(0, 120).c_str(), ms);
            if (!g.isOk()) {
                QCOMPARE(g.error().status, 400);
                QCOMPARE(g.error().param, std::string("response_format"));
            }
        }
    }

    void prefixingRuleNamesKeepsLiterals() {
        const std::string in = "root ::= item{2,3} \"root item\" [a-z] # root\nitem ::= \"x\"";
        const std::string out = grammar::prefixRuleNames(in, "p-");
        QCOMPARE(out, std::string("p-root ::= p-item{2,3} \"root item\" [a-z] # root\np-item ::= \"x\""));
        const std::string joined = "root ::= p-root\n" + out;
        auto g = grammar::parseGbnf(joined);
        QVERIFY(g.isOk());
        QCOMPARE(grammar::matchText(**g, "xxroot itemq"), TextMatch::Complete);
    }

    void forcedToolCallGrammars() {
        const auto tools = weatherTools();
        ToolChoice required{ToolChoiceMode::Required, {}};
        auto hermes = toolCallGrammar(tools, required, ToolCallStyle::Hermes);
        QVERIFY(hermes.isOk() && *hermes);
        const std::string call1 = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>";
        const std::string call2 = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\":\"UTC\"}}\n</tool_call>";
        auto accepts = [](const grammar::Grammar& g, const std::string& t) {
            return grammar::matchText(g, t) == TextMatch::Complete;
        };
        // The schema converter may space JSON differently; accept either spacing of the arguments.
        auto spaced = [](std::string s) {
            for (size_t p = 0; (p = s.find("\":\"", p)) != std::string::npos; p += 4) s.replace(p, 3, "\": \"");
            return s;
        };
        QVERIFY(accepts(**hermes, call1) || accepts(**hermes, spaced(call1)));
        // One call unless parallel calls are asked for; then a bounded number.
        QVERIFY(!accepts(**hermes, call1 + "\n" + call2) && !accepts(**hermes, spaced(call1 + "\n" + call2)));
        ToolChoice parallel{ToolChoiceMode::Required, {}, true};
        auto several = toolCallGrammar(tools, parallel, ToolCallStyle::Hermes);
        QVERIFY(several.isOk() && *several);
        QVERIFY(accepts(**several, call1 + "\n" + call2) || accepts(**several, spaced(call1 + "\n" + call2)));
        std::string eight = call1, nine;
        for (int i = 1; i < kMaxForcedCalls; ++i) eight += "\n" + call2;
        nine = eight + "\n" + call2;
        QVERIFY(accepts(**several, eight) || accepts(**several, spaced(eight)));
        QVERIFY(!accepts(**several, nine) && !accepts(**several, spaced(nine)));
        QCOMPARE(grammar::matchText(**hermes, "Sure! " + call1), TextMatch::Rejected);
        QCOMPARE(grammar::matchText(**hermes, "<tool_call>\n{\"name\": \"rm_rf\""), TextMatch::Rejected);
        QCOMPARE(grammar::matchText(**hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\""),
                 TextMatch::Rejected);
        // The text it yields is what parseToolCalls reads back.
        const std::string hermesText = accepts(**hermes, call1) ? call1 : spaced(call1);
        ToolCallParse parsed = parseToolCalls(hermesText, {"get_weather", "get_time"});
        QCOMPARE(parsed.calls.size(), size_t(1));
        QCOMPARE(parsed.calls[0].name, std::string("get_weather"));

        ToolChoice named{ToolChoiceMode::Named, "get_time"};
        auto one = toolCallGrammar(tools, named, ToolCallStyle::Llama);
        QVERIFY(one.isOk() && *one);
        const std::string llama = "{\"name\": \"get_time\", \"parameters\": {\"zone\":\"UTC\"}}";
        QVERIFY(accepts(**one, llama) || accepts(**one, spaced(llama)));
        QCOMPARE(grammar::matchText(**one, "{\"name\": \"get_weather\""), TextMatch::Rejected);
        auto mistral = toolCallGrammar(tools, required, ToolCallStyle::Mistral);
        QVERIFY(mistral.isOk() && *mistral);
        const std::string m = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}]";
        QVERIFY(accepts(**mistral, m) || accepts(**mistral, spaced(m)));

        ToolChoice autoChoice;
        auto none = toolCallGrammar(tools, autoChoice, ToolCallStyle::Hermes);
        QVERIFY(none.isOk() && !*none);
        std::vector<ToolFunction> bad = tools;
        bad[1].parameters = OJson::parse("{\"type\":\"object\",\"not\":{}}");
        auto loose = toolCallGrammar(bad, required, ToolCallStyle::Hermes); // "not" left out
        QVERIFY(loose.isOk() && *loose);
        bad[1].strict = true; // the function's "strict": every keyword enforced, else refused
        auto refused = toolCallGrammar(bad, required, ToolCallStyle::Hermes);
        QVERIFY(!refused.isOk());
        QCOMPARE(refused.error().param, std::string("tools[1].function.parameters"));
    }

    void toolCallsStreamAsWritten() {
        const std::string text =
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"n\": [1, {\"x\": \"}\"}]}}\n"
            "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
        const auto deltas = streamCalls(text);
        const auto calls = assemble(deltas);
        QCOMPARE(calls.size(), size_t(2));
        QCOMPARE(calls.at(0).first, std::string("get_weather"));
        QCOMPARE(calls.at(0).second, std::string("{\"city\": \"Oslo\", \"n\": [1, {\"x\": \"}\"}]}"));
        QCOMPARE(calls.at(1).first, std::string("get_time"));
        QCOMPARE(calls.at(1).second, std::string("{}"));
        // Arguments arrive in many fragments (one per byte here), not in one piece at the end.
        int fragments = 0;
        for (const ToolCallDelta& d : deltas) fragments += d.index == 0 && d.id.empty() && !d.arguments.empty();
        QVERIFY(fragments > 10);
        // The name comes out as soon as it is complete: before the arguments are.
        ToolCallStreamer s;
        QVERIFY(s.push("<tool_call>\n{\"name\": \"get_wea").empty());
        auto first = s.push("ther\", \"arguments\": {\"ci");
        QCOMPARE(first.size(), size_t(2));
        QCOMPARE(first[0].name, std::string("get_weather"));
        QVERIFY(!first[0].id.empty());
        QCOMPARE(first[1].arguments, std::string("{\"ci"));

        // Mistral's list, Llama's JSON with parameters, a wrapped {"function": {...}}.
        auto mistral = assemble(streamCalls("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": 1}}, "
                                            "{\"name\": \"b\", \"arguments\": {\"k\": 2}}]"));
        QCOMPARE(mistral.size(), size_t(2));
        QCOMPARE(mistral.at(1).second, std::string("{\"k\": 2}"));
        auto llama = assemble(streamCalls("{\"name\": \"a\", \"parameters\": {\"q\": \"x\"}}", {"a"}));
        QCOMPARE(llama.size(), size_t(1));
        QCOMPARE(llama.at(0).second, std::string("{\"q\": \"x\"}"));
        auto wrapped = assemble(streamCalls("{\"type\": \"function\", \"function\": {\"name\": \"a\", \"arguments\": {}}}"));
        QCOMPARE(wrapped.size(), size_t(1));
        QCOMPARE(wrapped.at(0).first, std::string("a"));
        // Arguments before the name: announced once the name is known, with everything so far.
        auto late = assemble(streamCalls("{\"arguments\": {\"z\": 1}, \"name\": \"a\"}"));
        QCOMPARE(late.size(), size_t(1));
        QCOMPARE(late.at(0).second, std::string("{\"z\": 1}"));
        // JSON that is not a call of a known function streams nothing.
        QVERIFY(streamCalls("{\"name\": \"Bob\", \"parameters\": 3}", {"a"}).empty());
        QVERIFY(streamCalls("{\"answer\": 42}").empty());
        QVERIFY(streamCalls("plain text, no braces").empty());
    }

    void harmonyMessagesSplit() {
        auto run = [](const std::string& text) {
            tmpl::HarmonyParser p;
            tmpl::OutputPiece all;
            auto add = [&](tmpl::OutputPiece piece) {
                all.reasoning += piece.reasoning;
                all.content += piece.content;
                for (auto& d : piece.calls) all.calls.push_back(std::move(d));
            };
                        for (char c : text) add(p.push(std::string(1, c)));
            add(p.finish());
            return all;
        };
        auto answer = run("<|channel|>analysis<|message|>The user greets.<|end|><|start|>assistant<|channel|>final"
                          "<|message|>Hello <there>!");
        QCOMPARE(answer.reasoning, std::string("The user greets."));
        QCOMPARE(answer.content, std::string("Hello <there>!"));
        QVERIFY(answer.calls.empty());
        auto call = run("<|channel|>analysis<|message|>Need the tool.<|end|><|start|>assistant<|channel|>commentary "
                        "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}");
        QCOMPARE(call.reasoning, std::string("Need the tool."));
        QCOMPARE(call.content, std::string());
        auto calls = assemble(call.calls);
        QCOMPARE(calls.size(), size_t(1));
        QCOMPARE(calls.at(0).first, std::string("get_weather"));
        QCOMPARE(calls.at(0).second, std::string("{\"city\":\"Oslo\"}"));
        // The recipient before the channel, as the template writes past calls.
        auto before = run(" to=functions.add<|channel|>commentary json<|message|>{\"a\":1}");
        QCOMPARE(assemble(before.calls).at(0).first, std::string("add"));
        auto plain = run("Just text, <|no|> harmony.");
        QCOMPARE(plain.content, std::string("Just text, <|no|> harmony."));
        QVERIFY(tmpl::promptIsHarmony("<|start|>user<|message|>hi<|end|><|start|>assistant"));
        QVERIFY(!tmpl::promptIsHarmony("<|im_start|>assistant\n"));
        // A forced call in harmony form, optionally after an analysis message.
        auto g = toolCallGrammar(weatherTools(), ToolChoice{ToolChoiceMode::Required, {}}, ToolCallStyle::Harmony);
        QVERIFY(g.isOk() && *g);
        const std::string forced = "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{\"zone\":\"UTC\"}";
        auto spaced = forced.substr(0, forced.size() - 14) + "{\"zone\": \"UTC\"}";
        QVERIFY(grammar::matchText(**g, forced) == TextMatch::Complete ||
                grammar::matchText(**g, spaced) == TextMatch::Complete);
        QVERIFY(grammar::matchText(**g, "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant" + forced) ==
                    TextMatch::Complete ||
                grammar::matchText(**g, "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant" + spaced) ==
                    TextMatch::Complete);
        QCOMPARE(grammar::matchText(**g, "<|channel|>final<|message|>"), TextMatch::Rejected);
    }

    void thinkBlocksSplitOff() {
        auto a = splitBytewise("<think>\nweigh it\n</think>\n\nThe answer.");
        QCOMPARE(a.reasoning, std::string("\nweigh it\n"));
        QCOMPARE(a.content, std::string("The answer."));
        auto inside = splitBytewise("still thinking</think>done", true);
        QCOMPARE(inside.reasoning, std::string("still thinking"));
        QCOMPARE(inside.content, std::string("done"));
        auto plain = splitBytewise("No tags <think> here.");
        QCOMPARE(plain.reasoning, std::string());
        QCOMPARE(plain.content, std::string("No tags <think> here."));
        auto look = splitBytewise("<thinking> is a word");
        QCOMPARE(look.content, std::string("<thinking> is a word"));
        auto unclosed = splitBytewise("<think>cut off by max_tokens </thi");
        QCOMPARE(unclosed.reasoning, std::string("cut off by max_tokens </thi"));
        QCOMPARE(unclosed.content, std::string());
        auto lead = splitBytewise("  \n<think>x</think>y");
        QCOMPARE(lead.reasoning, std::string("x"));
        QCOMPARE(lead.content, std::string("y"));
        QVERIFY(tmpl::promptOpensReasoning("<|im_start|>assistant\n<think>\n"));
        QVERIFY(!tmpl::promptOpensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        QVERIFY(!tmpl::promptOpensReasoning("<|im_start|>assistant\n"));
    }
};

QTEST_GUILESS_MAIN(TestServerStructured)
#include "test_server_structured.moc"
