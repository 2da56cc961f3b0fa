// The engine host's chat reply handling on its own: the reader chosen from a rendered prompt, a
// scripted reply split into reasoning and answer however it is cut into pieces (<think> blocks,
// a prompt that opened <think>, gpt-oss harmony), and the template request that keeps an earlier
// reply's reasoning out of its content and carries tools, tool calls and their results (rendered
// with the real Qwen3 and DeepSeek-R1 templates).
#include "services/chat_reply.h"
#include "services/chat_tools.h"

#include "test_support.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <string>
#include <vector>

using namespace hearth;
using namespace hearth::app;

namespace {

// Feeds `pieces` through a reader and joins what comes out, plus how many pieces carried
// reasoning after the first answer piece (a <think> reply must have none).
struct Split {
    std::string reasoning;
    std::string answer;
    int reasoningAfterAnswer = 0;
};

Split feed(ReplyFormat format, const std::vector<std::string>& pieces) {
    ReplyReader reader(format);
    Split out;
    auto take = [&](const ReplyPiece& p) {
        if (!p.reasoning.empty() && !out.answer.empty()) ++out.reasoningAfterAnswer;
        out.reasoning += p.reasoning;
        out.answer += p.answer;
    };
    for (const std::string& piece : pieces) take(reader.push(piece));
    take(reader.finish());
    return out;
}

// The text cut every `n` bytes (markers split across pieces).
std::vector<std::string> cut(const std::string& text, size_t n) {
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size(); at += n) pieces.push_back(text.substr(at, n));
    return pieces;
}

std::string templateSource(const char* name) {
    QFile f(QString::fromStdString(test::testDataPath(QStringLiteral("templates/%1.jinja").arg(QLatin1String(name)))));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

} // namespace

class TestChatReply : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void formatFollowsTheRenderedPrompt() {
        QCOMPARE(replyFormatFor("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"), ReplyFormat::Think);
        QCOMPARE(replyFormatFor("<｜User｜>hi<｜Assistant｜><think>\n"), ReplyFormat::ThinkOpened);
        // A closed block in the prompt (thinking turned off) does not open the reply.
        QCOMPARE(replyFormatFor("<｜User｜>hi<｜Assistant｜><think>\n</think>"), ReplyFormat::Think);
        QCOMPARE(replyFormatFor("<|start|>user<|message|>hi<|end|><|start|>assistant"), ReplyFormat::Harmony);
    }

    void thinkBlockSplitsHoweverTheReplyIsCut() {
        const std::string reply = "<think>\nThe user greets me. 15 × 4 = 60.\n</think>\n\nHello! It is 60.";
        for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(7), reply.size()}) {
            const Split s = feed(ReplyFormat::Think, cut(reply, n));
            QCOMPARE(s.reasoning, std::string("\nThe user greets me. 15 × 4 = 60.\n"));
            QCOMPARE(s.answer, std::string("Hello! It is 60."));
            QCOMPARE(s.reasoningAfterAnswer, 0);
        }
        // No block: all answer, nothing held back for good (a lone '<' that could start <think>
        // comes out at the end).
        const Split plain = feed(ReplyFormat::Think, {"<", "b>bold</b> text"});
        QCOMPARE(plain.reasoning, std::string());
        QCOMPARE(plain.answer, std::string("<b>bold</b> text"));
        const Split lone = feed(ReplyFormat::Think, {"<th"});
        QCOMPARE(lone.answer, std::string("<th"));
        // Plain completions are never split (negative control: the same text, untouched).
        const Split raw = feed(ReplyFormat::Plain, cut(reply, 3));
        QCOMPARE(raw.answer, reply);
        QVERIFY(raw.reasoning.empty());
    }

    void promptThatOpenedThinkStartsInReasoning() {
        const std::string reply = "Let me add: 2 + 2 = 4.\n</think>\n\nFour.";
        for (size_t n : {size_t(1), size_t(5), reply.size()}) {
            const Split s = feed(ReplyFormat::ThinkOpened, cut(reply, n));
            QCOMPARE(s.reasoning, std::string("Let me add: 2 + 2 = 4.\n"));
            QCOMPARE(s.answer, std::string("Four."));
        }
        // Cut off while thinking (length): everything is reasoning, the answer empty.
        const Split cutOff = feed(ReplyFormat::ThinkOpened, {"Still thinking </thi"});
        QCOMPARE(cutOff.reasoning, std::string("Still thinking </thi"));
        QVERIFY(cutOff.answer.empty());
        // Read as if the prompt had not opened it, the same reply is all answer (the choice matters).
        QCOMPARE(feed(ReplyFormat::Think, {reply}).answer, reply);
    }

    void harmonyChannelsSplit() {
        const std::string reply = "<|channel|>analysis<|message|>User asks the time. I cannot know."
                                  "<|end|><|start|>assistant<|channel|>final<|message|>I have no clock."
                                  "<|return|>";
        for (size_t n : {size_t(1), size_t(4), reply.size()}) {
            const Split s = feed(ReplyFormat::Harmony, cut(reply, n));
            QCOMPARE(s.reasoning, std::string("User asks the time. I cannot know."));
            QCOMPARE(s.answer, std::string("I have no clock."));
        }
        // A tool call comes at the answer's end as the <tool_call> block the chat reads calls from,
        // however the text was cut.
        const std::string harmonyCall = "<|channel|>commentary to=functions.notes__add <|constrain|>json<|message|>"
                                        "{\"text\": \"milk\"}<|call|>";
        for (size_t n : {size_t(1), size_t(5), harmonyCall.size()}) {
            const Split call = feed(ReplyFormat::Harmony, cut(harmonyCall, n));
            QCOMPARE(call.answer, std::string("\n<tool_call>\n{\"name\":\"notes__add\", \"arguments\": {\"text\":\"milk\"}}\n</tool_call>"));
            QVERIFY(call.reasoning.empty());
            const QJsonArray offered{QJsonObject{{QStringLiteral("type"), QStringLiteral("function")},
                                                 {QStringLiteral("function"), QJsonObject{{QStringLiteral("name"), QStringLiteral("notes__add")}}}}};
            const ReplyToolCalls read = readToolCalls(QString::fromStdString(call.answer), offered);
            QCOMPARE(read.calls.size(), 1);
            QCOMPARE(read.calls[0].name, QStringLiteral("notes__add"));
            QCOMPARE(read.calls[0].arguments, QStringLiteral("{\"text\":\"milk\"}"));
            QVERIFY(read.content.isEmpty());
        }
        QCOMPARE(toolCallText("f", "not json"), std::string("\n<tool_call>\n{\"name\":\"f\", \"arguments\": {}}\n</tool_call>"));
    }

    // A chat with MCP tools: the tools, the assistant's call (its arguments as a mapping) and
    // the tool's result reach the template (the real Qwen3 one) as the API server gives them.
    void toolCallsAndResultsReachTheTemplate() {
        QList<ChatMessage> chat = {{QStringLiteral("user"), QStringLiteral("Note that milk is out.")},
                                   {QStringLiteral("assistant"), QString()},
                                   {QStringLiteral("tool"), QStringLiteral("NOTED-42")}};
        chat[1].toolCalls = {{QStringLiteral("call_1"), QStringLiteral("notes__add"), QStringLiteral("{\"text\": \"milk is out\"}")}};
        chat[2].toolCallId = QStringLiteral("call_1");
        QJsonObject params{{QStringLiteral("type"), QStringLiteral("object")}};
        QJsonObject fn{{QStringLiteral("name"), QStringLiteral("notes__add")},
                       {QStringLiteral("description"), QStringLiteral("Adds a note")},
                       {QStringLiteral("parameters"), params}};
        const QJsonArray tools{QJsonObject{{QStringLiteral("type"), QStringLiteral("function")}, {QStringLiteral("function"), fn}}};
        const tmpl::ChatRequest request = chatRequestFor(chat, tools);
        const QJsonArray sent = QJsonDocument::fromJson(QByteArray::fromStdString(request.toolsJson)).array();
        QCOMPARE(sent.size(), 1);
        QCOMPARE(sent[0].toObject()[QStringLiteral("function")].toObject()[QStringLiteral("name")].toString(),
                 QStringLiteral("notes__add"));
        const tmpl::ChatToolCall& call = request.messages[1].toolCalls[0];
        QCOMPARE(call.id, std::string("call_1"));
        QCOMPARE(call.arguments, std::string("{\"text\": \"milk is out\"}")); // an object: the template gets a mapping
        QCOMPARE(request.messages[2].toolCallId, std::string("call_1"));
        // Arguments that are not JSON stay text (a JSON string for the template); no tools: none given.
        chat[1].toolCalls[0].arguments = QStringLiteral("not json");
        QCOMPARE(chatRequestFor(chat).messages[1].toolCalls[0].arguments, std::string("\"not json\""));
        QVERIFY(chatRequestFor(chat).toolsJson.empty());

        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("templates/Qwen-Qwen3-0.6B.jinja"));
        auto qwen = tmpl::ChatTemplate::parse(templateSource("Qwen-Qwen3-0.6B"));
        QVERIFY(qwen);
        auto rendered = tmpl::applyChatTemplate(*qwen, request);
        QVERIFY2(rendered, rendered ? "" : rendered.status().toString().c_str());
        QVERIFY2(rendered->find("\"name\": \"notes__add\"") != std::string::npos, rendered->c_str());
        QVERIFY2(rendered->find("<tool_call>") != std::string::npos, rendered->c_str());
        QVERIFY2(rendered->find("milk is out") != std::string::npos, rendered->c_str());
        QVERIFY2(rendered->find("<tool_response>\nNOTED-42\n</tool_response>") != std::string::npos, rendered->c_str());
    }

    void reasoningTravelsApartFromContent() {
        const QList<ChatMessage> chat = {{QStringLiteral("system"), QStringLiteral("Be brief.")},
                                         {QStringLiteral("user"), QStringLiteral("What is 15 * 4?")},
                                         {QStringLiteral("assistant"), QStringLiteral("60."),
                                          QStringLiteral("15 * 4 = 60, SECRET-STEP.")},
                                         {QStringLiteral("user"), QStringLiteral("And 15 * 5?")}};
        const tmpl::ChatRequest request = chatRequestFor(chat);
        QVERIFY(request.addGenerationPrompt);
        QCOMPARE(request.messages.size(), size_t(4));
        const auto& assistant = request.messages[2];
        QCOMPARE(assistant.content.value_or(""), std::string("60."));
        QCOMPARE(assistant.reasoning, std::string("15 * 4 = 60, SECRET-STEP."));
        QVERIFY(request.messages[1].reasoning.empty());

        // Qwen3 drops the reasoning of turns before the last question; the answer stays.
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("templates/Qwen-Qwen3-0.6B.jinja"));
        auto qwen = tmpl::ChatTemplate::parse(templateSource("Qwen-Qwen3-0.6B"));
        QVERIFY(qwen);
        auto rendered = tmpl::applyChatTemplate(*qwen, request);
        QVERIFY2(rendered, rendered ? "" : rendered.status().toString().c_str());
        QVERIFY(rendered->find("<|im_start|>assistant\n60.<|im_end|>") != std::string::npos);
        QVERIFY(rendered->find("SECRET-STEP") == std::string::npos);
        QCOMPARE(replyFormatFor(*rendered), ReplyFormat::Think);
        // Negative control: the reasoning put into the content (as "<think>" text) would reach a
        // template that does not strip it, e.g. the built-in ChatML one.
        QList<ChatMessage> inlined = chat;
        inlined[2].content = QStringLiteral("<think>") + inlined[2].reasoning + QStringLiteral("</think>60.");
        inlined[2].reasoning.clear();
        auto chatml = tmpl::ChatTemplate::parse(std::string(tmpl::builtinChatMlTemplate()));
        QVERIFY(chatml);
        auto leaked = tmpl::applyChatTemplate(*chatml, chatRequestFor(inlined));
        QVERIFY(leaked && leaked->find("SECRET-STEP") != std::string::npos);
        auto clean = tmpl::applyChatTemplate(*chatml, request);
        QVERIFY(clean && clean->find("SECRET-STEP") == std::string::npos);

        // DeepSeek-R1's template opens <think> in the prompt when thinking is on.
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));
        auto r1 = tmpl::ChatTemplate::parse(templateSource("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"));
        QVERIFY(r1);
        tmpl::ChatRequest thinking = request;
        thinking.specialTokens = {{"bos_token", "<｜begin▁of▁sentence｜>"}};
        thinking.templateKwargsJson = R"({"enable_thinking": true})";
        auto opened = tmpl::applyChatTemplate(*r1, thinking);
        QVERIFY2(opened, opened ? "" : opened.status().toString().c_str());
        QVERIFY(opened->find("SECRET-STEP") == std::string::npos);
        QCOMPARE(replyFormatFor(*opened), ReplyFormat::ThinkOpened);
    }
};

QTEST_GUILESS_MAIN(TestChatReply)
#include "test_chat_reply.moc"
