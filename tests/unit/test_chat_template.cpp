// Tests of the chat-template API: request parsing, the variables transformers passes (order,
// overrides, only the special tokens that are set), continue_final_message post-processing, the
// ChatML fallback, concurrent rendering, and `hearth-cli template` (run in-process).
#include "commands.h"
#include "hearth/chat_template.h"
#include "hearth/gguf.h"
#include "tokenizer/chat_template/chat_json.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <fstream>
#include <thread>

namespace hearth::cli {
int runTemplateStreams(Args args, std::FILE* out, std::FILE* err); // app/cli/cmd_template.cpp
}

using namespace hearth;
using nlohmann::ordered_json;

namespace {

Result<std::string> renderRequest(const std::string& source, const tmpl::ChatRequest& req) {
    Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(source);
    if (!t) return t.status();
    return tmpl::applyChatTemplate(*t, req);
}

std::vector<tmpl::ChatMessage> messagesOf(const ordered_json& messages) {
    std::vector<tmpl::ChatMessage> out;
    for (const ordered_json& m : messages) out.push_back(tmpl::chatMessageFromValue(m));
    return out;
}

tmpl::ChatRequest request(const ordered_json& messages, bool generationPrompt = false) {
    tmpl::ChatRequest r;
    r.messages = messagesOf(messages);
    r.addGenerationPrompt = generationPrompt;
    return r;
}

std::string readAll(std::FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    return s;
}

struct CliResult {
    int code;
    std::string out;
    std::string err;
};

CliResult runCli(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    CliResult r;
    r.code = cli::runTemplateStreams(cli::Args(views), out, err);
    r.out = readAll(out);
    r.err = readAll(err);
    std::fclose(out);
    std::fclose(err);
    return r;
}

void writeFile(const QString& path, const std::string& text) {
    std::ofstream(path.toStdString(), std::ios::binary) << text;
}

} // namespace

class TestChatTemplate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void requestFromJson() {
        const std::string j = R"({
            "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "add_generation_prompt": true,
            "continue_final_message": false,
            "template_kwargs": {"enable_thinking": false},
            "bos_token": "<s>", "eos_token": "</s>", "note": "ignored", "count_token": 3})";
        Result<tmpl::ChatRequest> r = tmpl::chatRequestFromJson(j);
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(r->messages.size(), size_t(1));
        QCOMPARE(r->messages[0].role, std::string("user"));
        QCOMPARE(r->messages[0].content.value_or("-"), std::string("Hi"));
        QVERIFY(r->messages[0].rawJson.empty());
        QCOMPARE(r->toolsJson, std::string(R"([{"type":"function","function":{"name":"f"}}])"));
        QVERIFY(r->documentsJson.empty());
        QVERIFY(r->addGenerationPrompt);
        QVERIFY(!r->continueFinalMessage);
        QCOMPARE(r->templateKwargsJson, std::string(R"({"enable_thinking":false})"));
        const tmpl::SpecialTokens tokens{{"bos_token", "<s>"}, {"eos_token", "</s>"}};
        QVERIFY(r->specialTokens == tokens);

        QVERIFY(!tmpl::chatRequestFromJson("[]").isOk());
        QVERIFY(!tmpl::chatRequestFromJson("{").isOk());
        QVERIFY(!tmpl::chatRequestFromJson(R"({"tools": []})").isOk());
        QVERIFY(!tmpl::chatRequestFromJson(R"({"messages": {}})").isOk());
        QVERIFY(!tmpl::chatRequestFromJson(R"({"messages": [], "tools": 5})").isOk());
        QVERIFY(!tmpl::chatRequestFromJson(R"({"messages": [], "add_generation_prompt": "yes"})").isOk());
        QVERIFY(!tmpl::chatRequestFromJson(R"({"messages": [], "template_kwargs": []})").isOk());
    }

    void messagesAsTemplatesSeeThem() {
        // Typed messages become transformers' mappings, keys in a fixed order, optional ones only
        // when set; tool-call arguments are parsed (text that is not JSON stays a string).
        tmpl::ChatMessage call;
        call.role = "assistant";
        call.content = std::nullopt;
        call.reasoning = "think";
        call.toolCalls = {{"c1", "f", R"({"b": 1, "a": [2]})"}, {"", "g", "not json"}, {"c3", "h", ""}};
        tmpl::ChatMessage result;
        result.role = "tool";
        result.content = "42";
        result.name = "f";
        result.toolCallId = "c1";
        QCOMPARE(tmpl::chatMessageJson(call).dump(),
                 std::string(R"({"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[)"
                             R"({"id":"c1","type":"function","function":{"name":"f","arguments":{"b":1,"a":[2]}}},)"
                             R"({"type":"function","function":{"name":"g","arguments":"not json"}},)"
                             R"({"id":"c3","type":"function","function":{"name":"h","arguments":{}}}]})"));
        QCOMPARE(tmpl::chatMessageJson(result).dump(),
                 std::string(R"({"role":"tool","content":"42","name":"f","tool_call_id":"c1"})"));

        // Read back: the same typed message; anything else is kept whole, so templates see it unchanged.
        Result<tmpl::ChatMessage> typed = tmpl::chatMessageFromJson(tmpl::chatMessageJson(call).dump());
        QVERIFY(typed.isOk() && typed->rawJson.empty());
        QCOMPARE(tmpl::chatMessageJson(*typed).dump(), tmpl::chatMessageJson(call).dump());
        for (const char* other : {R"({"role":"tool","tool_call_id":"c1","content":"42"})",
                                  R"({"role":"user","content":[{"type":"text","text":"a"}]})",
                                  R"({"role":"user"})", R"({"content":"x","role":"user"})",
                                  R"({"role":"user","content":"x","extra":1})",
                                  R"({"role":"assistant","content":"","tool_calls":[]})",
                                  R"({"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"f"}}]})"}) {
            Result<tmpl::ChatMessage> m = tmpl::chatMessageFromJson(other);
            QVERIFY(m.isOk());
            QVERIFY2(!m->rawJson.empty(), other);
            QCOMPARE(tmpl::chatMessageJson(*m).dump(), ordered_json::parse(other).dump());
        }
        QVERIFY(!tmpl::chatMessageFromJson("[1]").isOk());
        QVERIFY(!tmpl::chatMessageFromJson("nope").isOk());

        // JSON text that does not parse is an error when rendering, not a crash.
        tmpl::ChatRequest bad = request(ordered_json::array());
        bad.toolsJson = "[";
        QVERIFY(!renderRequest("x", bad).isOk());
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse("{{ a }}");
        QVERIFY(t.isOk());
        QCOMPARE(*t->render(R"({"a": [1, "b"]})"), std::string("[1, 'b']"));
        QVERIFY(!t->render("{").isOk());
    }

    void variablesFollowTransformers() {
        tmpl::ChatRequest r = request(ordered_json::array(), true);
        r.specialTokens = {{"bos_token", "<s>"}};
        r.templateKwargsJson = R"({"bos_token": "<override>", "enable_thinking": false})";
        const ordered_json vars = *tmpl::chatRequestVariables(r);
        std::string keys;
        for (auto it = vars.begin(); it != vars.end(); ++it) keys += it.key() + ",";
        QCOMPARE(keys, std::string("messages,tools,documents,add_generation_prompt,bos_token,enable_thinking,"));
        // tools and documents are always defined (none); only the special tokens that are set exist;
        // template kwargs override special tokens.
        Result<std::string> out = renderRequest("{{ tools is defined }} {{ tools is none }} {{ documents is none }} "
                                        "{{ add_generation_prompt }} {{ bos_token }} {{ eos_token is defined }} "
                                        "{{ enable_thinking }}",
                                        r);
        QVERIFY2(out.isOk(), out.status().toString().c_str());
        QCOMPARE(*out, std::string("True True True True <override> False False"));
    }

    void continueFinalMessage() {
        const std::string chatml(tmpl::builtinChatMlTemplate());
        tmpl::ChatRequest r = request({{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Hello  "}}});
        r.continueFinalMessage = true;
        // The template keeps the trailing spaces: cut right after them.
        QCOMPARE(*renderRequest(chatml, r), std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello  "));
        // A template that trims: cut after the stripped text.
        const std::string trimming = "{% for m in messages %}[{{ m.role }}]{{ m.content|trim }}<eot>{% endfor %}";
        QCOMPARE(*renderRequest(trimming, r), std::string("[user]Hi<eot>[assistant]Hello"));
        // Leading whitespace in the message: cut after the stripped text.
        r.messages[1].content = "  Hello";
        QCOMPARE(*renderRequest(chatml, r), std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n  Hello"));
        // The last occurrence is used.
        r.messages = messagesOf({{{"role", "user"}, {"content", "same"}}, {{"role", "assistant"}, {"content", "same"}}});
        QCOMPARE(*renderRequest(chatml, r), std::string("<|im_start|>user\nsame<|im_end|>\n<|im_start|>assistant\nsame"));
        // Content parts: the last text part is continued.
        r.messages = messagesOf({{{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "part one"}}}}}});
        QCOMPARE(*renderRequest(chatml, r), std::string("<|im_start|>assistant\npart one"));
        // A template that drops the message: error.
        Result<std::string> dropped = renderRequest("{{ 'nothing' }}", request({{{"role", "assistant"}, {"content", "abc"}}}));
        QVERIFY(dropped.isOk());
        tmpl::ChatRequest missing = request({{{"role", "assistant"}, {"content", "abc"}}});
        missing.continueFinalMessage = true;
        Result<std::string> err = renderRequest("{{ 'nothing' }}", missing);
        QVERIFY(!err.isOk());
        QVERIFY(err.status().message().find("does not appear") != std::string::npos);
        // Not together with add_generation_prompt, not without messages.
        missing.addGenerationPrompt = true;
        QVERIFY(!renderRequest(chatml, missing).isOk());
        tmpl::ChatRequest empty = request(ordered_json::array());
        empty.continueFinalMessage = true;
        QVERIFY(!renderRequest(chatml, empty).isOk());
    }

    void chatMlFallback() {
        tmpl::ChatRequest r = request({{{"role", "system"}, {"content", "Be brief."}},
                                       {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "image"}}, {{"type", "text"}, {"text", "b"}}}}},
                                       {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ordered_json::array()}}},
                                      true);
        Result<std::string> out = renderRequest(std::string(tmpl::builtinChatMlTemplate()), r);
        QVERIFY2(out.isOk(), out.status().toString().c_str());
        QCOMPARE(*out, std::string("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nab<|im_end|>\n"
                                   "<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n"));
    }

    void concurrentRendersAgree() {
        HEARTH_REQUIRE_TEST_FILE("templates/Qwen-Qwen3-0.6B.jinja");
        std::ifstream in(test::testDataPath("templates/Qwen-Qwen3-0.6B.jinja"), std::ios::binary);
        const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(source);
        QVERIFY(t.isOk());
        QCOMPARE(t->source(), source);
        const tmpl::ChatTemplate shared = *t; // copies share the parse
        tmpl::ChatRequest r = request({{{"role", "user"}, {"content", "Hi"}},
                                       {{"role", "assistant"}, {"content", "<think>x</think>Yes"}},
                                       {{"role", "user"}, {"content", "More"}}},
                                      true);
        const std::string expected = *tmpl::applyChatTemplate(shared, r);
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < 4; ++i) {
            threads.emplace_back([&] {
                for (int k = 0; k < 200; ++k) {
                    Result<std::string> out = tmpl::applyChatTemplate(shared, r);
                    if (!out.isOk() || *out != expected) ++mismatches;
                }
            });
        }
        for (auto& th : threads) th.join();
        QCOMPARE(mismatches.load(), 0);
    }

    void oddBytesAreSafe() {
        // Invalid UTF-8 in data is carried through, never a crash.
        tmpl::ChatRequest r = request({{{"role", "user"}, {"content", std::string("a\xff\xfe\xc3")}}});
        Result<std::string> out = renderRequest("{{ messages[0].content|upper }}|{{ messages[0].content[::-1]|length }}|"
                                        "{{ messages[0].content|tojson }}|{{ messages[0].content.strip() }}",
                                        r);
        QVERIFY2(out.isOk(), out.status().toString().c_str());
        QVERIFY(out->find("A\xff\xfe\xc3|4|") == 0);
    }

    // ---- hearth-cli template ----
    void cliRendersATemplateFile() {
        QTemporaryDir dir;
        const QString tpl = dir.filePath("t.jinja"), req = dir.filePath("req.json");
        writeFile(tpl, "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
                       "{% if add_generation_prompt %}[assistant]{% endif %}|{{ strftime_now('%Y-%m-%d') }}\n");
        writeFile(req, R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true, "bos_token": "<s>"})");
        CliResult r = runCli({tpl.toStdString(), "--input", req.toStdString(), "--now", "2026-01-15T00:00:00"});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, std::string("<s>[user]Hi[assistant]|2026-01-15"));
        QVERIFY(r.err.empty());
    }

    void cliReportsErrors() {
        QTemporaryDir dir;
        const QString tpl = dir.filePath("t.jinja"), req = dir.filePath("req.json"), bad = dir.filePath("bad.json");
        writeFile(tpl, "{{ raise_exception('Conversation roles must alternate') }}");
        writeFile(req, R"({"messages": []})");
        writeFile(bad, "{not json");
        CliResult r = runCli({tpl.toStdString(), "--input", req.toStdString()});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, std::string("Conversation roles must alternate\n"));
        QVERIFY(r.out.empty());
        QCOMPARE(runCli({tpl.toStdString()}).code, 2);                                          // no --input
        QCOMPARE(runCli({tpl.toStdString(), "--input", bad.toStdString()}).code, 2);             // bad JSON
        QCOMPARE(runCli({tpl.toStdString(), "--input", dir.filePath("none.json").toStdString()}).code, 2);
        QCOMPARE(runCli({dir.filePath("none.jinja").toStdString(), "--input", req.toStdString()}).code, 2);
        QCOMPARE(runCli({tpl.toStdString(), "--input", req.toStdString(), "--bogus"}).code, 2);
        QCOMPARE(runCli({tpl.toStdString(), "--input", req.toStdString(), "--now", "yesterday"}).code, 2);
        QCOMPARE(runCli({"--help"}).code, 0);
        writeFile(tpl, "{% if %}");
        r = runCli({tpl.toStdString(), "--input", req.toStdString()});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.find("syntax error") != std::string::npos);
    }

    void cliUsesTheGgufTemplateAndTokens() {
        QTemporaryDir dir;
        const QString model = dir.filePath("m.gguf"), req = dir.filePath("req.json");
        gguf::Writer w;
        w.set("general.architecture", gguf::Value::string("llama"));
        w.set("tokenizer.chat_template", gguf::Value::string("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"));
        w.set("tokenizer.ggml.tokens", gguf::Value::stringArray({"<unk>", "<BOS>", "<EOS>", "x"}));
        w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
        w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
        QVERIFY(w.writeFile(model.toStdString()).isOk());
        writeFile(req, R"({"messages": [{"role": "user", "content": "Hi"}]})");
        CliResult r = runCli({model.toStdString(), "--input", req.toStdString()});
        QVERIFY2(r.code == 0, r.err.c_str());
        QCOMPARE(r.out, std::string("<BOS>Hi<EOS>"));
        // The request's tokens win.
        writeFile(req, R"({"messages": [{"role": "user", "content": "Hi"}], "eos_token": "</s>"})");
        QCOMPARE(runCli({model.toStdString(), "--input", req.toStdString()}).out, std::string("<BOS>Hi</s>"));
    }

    void cliFallsBackToChatMl() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        const QString req = dir.filePath("req.json");
        writeFile(req, R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true})");
        CliResult r = runCli({test::testDataPath("models/stories260K.gguf"), "--input", req.toStdString()});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
        QVERIFY(r.err.find("ChatML") != std::string::npos);
    }

    void cliMatchesTheGoldenRenderings() {
        // Every shared case as REQ.json (the case merged with the template's variables).
        HEARTH_REQUIRE_TEST_FILE("templates/cases.json");
        QTemporaryDir dir;
        auto load = [](const std::string& rel) {
            std::ifstream in(test::testDataPath(QString::fromStdString(rel)), std::ios::binary);
            return ordered_json::parse(in);
        };
        const ordered_json cases = load("templates/cases.json");
        int checked = 0;
        for (auto t = cases["template_vars"].begin(); t != cases["template_vars"].end(); ++t) {
            const ordered_json expected = load("templates/" + t.key() + ".expected.json");
            const std::string tpl = test::testDataPath(QString::fromStdString("templates/" + t.key() + ".jinja"));
            for (const ordered_json& c : cases["cases"]) {
                if (!expected.contains(c["id"].get<std::string>())) continue;
                ordered_json req = c;
                for (auto v = t.value().begin(); v != t.value().end(); ++v) req[v.key()] = v.value();
                const QString reqPath = dir.filePath("req.json");
                writeFile(reqPath, req.dump());
                CliResult r = runCli({tpl, "--input", reqPath.toStdString(), "--now", "2026-01-15T00:00:00"});
                const ordered_json& want = expected[c["id"].get<std::string>()];
                const std::string where = t.key() + "/" + c["id"].get<std::string>();
                if (want.contains("output")) {
                    QVERIFY2(r.code == 0, (where + ": " + r.err).c_str());
                    QVERIFY2(r.out == want["output"].get<std::string>(), where.c_str());
                } else {
                    QVERIFY2(r.code == 1 && r.out.empty(), where.c_str());
                    if (want["error_kind"] == "raise_exception")
                        QCOMPARE(r.err, want["error"].get<std::string>() + "\n");
                }
                ++checked;
            }
        }
        QCOMPARE(checked, 168);
    }

    void cliRendersTheQwen2VocabTemplate() {
        HEARTH_REQUIRE_TEST_FILE("models/ggml-vocab-qwen2.gguf");
        QTemporaryDir dir;
        const QString req = dir.filePath("req.json");
        writeFile(req, R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true})");
        CliResult r = runCli({test::testDataPath("models/ggml-vocab-qwen2.gguf"), "--input", req.toStdString()});
        QVERIFY2(r.code == 0, r.err.c_str());
        QVERIFY2(r.out.find("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") != std::string::npos, r.out.c_str());
    }
};

QTEST_GUILESS_MAIN(TestChatTemplate)
#include "test_chat_template.moc"
