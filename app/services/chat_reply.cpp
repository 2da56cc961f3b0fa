// The chat template request of the app's chats and the reader that splits replies, both on the
// engine's public readers (hearth/chat_output.h), the same ones the API server uses.
#include "services/chat_reply.h"

#include "services/chat_documents.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace hearth::app {

ReplyFormat replyFormatFor(std::string_view renderedPrompt) {
    if (tmpl::promptIsHarmony(renderedPrompt)) return ReplyFormat::Harmony;
    if (tmpl::promptOpensReasoning(renderedPrompt)) return ReplyFormat::ThinkOpened;
    return ReplyFormat::Think;
}

tmpl::ChatRequest chatRequestFor(const QList<ChatMessage>& messages, const QJsonArray& tools) {
    tmpl::ChatRequest chat;
    for (const ChatMessage& m : messages) {
        const QString content = messageTextForModel(m.content, m.documents);
        nlohmann::ordered_json message = {{"role", m.role.toStdString()}, {"content", content.toStdString()}};
        if (m.role == QStringLiteral("assistant") && !m.reasoning.isEmpty())
            message["reasoning_content"] = m.reasoning.toStdString();
        if (!m.toolCalls.isEmpty()) {
            nlohmann::ordered_json calls = nlohmann::ordered_json::array();
            for (const ChatToolCall& c : m.toolCalls) {
                const std::string text = c.arguments.toStdString();
                nlohmann::ordered_json args = nlohmann::ordered_json::parse(text, nullptr, false);
                if (args.is_discarded() || !args.is_object()) args = text.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json(text);
                calls.push_back({{"id", c.id.toStdString()},
                                 {"type", "function"},
                                 {"function", {{"name", c.name.toStdString()}, {"arguments", std::move(args)}}}});
            }
            message["tool_calls"] = std::move(calls);
        }
        if (m.role == QStringLiteral("tool") && !m.toolCallId.isEmpty()) message["tool_call_id"] = m.toolCallId.toStdString();
        chat.messages.push_back(std::move(message));
    }
    if (!tools.isEmpty()) {
        chat.tools = nlohmann::ordered_json::parse(QJsonDocument(tools).toJson(QJsonDocument::Compact).toStdString(),
                                                   nullptr, false);
        if (chat.tools.is_discarded()) chat.tools = nullptr;
    }
    chat.addGenerationPrompt = true;
    return chat;
}

ReplyReader::ReplyReader(ReplyFormat format) : m_format(format) {
    switch (format) {
    case ReplyFormat::Plain: break;
    case ReplyFormat::Think: m_think.emplace(false); break;
    case ReplyFormat::ThinkOpened: m_think.emplace(true); break;
    case ReplyFormat::Harmony: m_harmony.emplace(); break;
    }
}

ReplyPiece ReplyReader::push(std::string_view text) {
    if (m_think) {
        tmpl::ReasoningPiece p = m_think->push(text);
        return {std::move(p.reasoning), std::move(p.content)};
    }
    if (m_harmony) {
        tmpl::OutputPiece p = m_harmony->push(text);
        collect(p.calls);
        return {std::move(p.reasoning), std::move(p.content)};
    }
    return {std::string(), std::string(text)};
}

ReplyPiece ReplyReader::finish() {
    if (m_think) {
        tmpl::ReasoningPiece p = m_think->finish();
        return {std::move(p.reasoning), std::move(p.content)};
    }
    if (m_harmony) {
        tmpl::OutputPiece p = m_harmony->finish();
        collect(p.calls);
        ReplyPiece out{std::move(p.reasoning), std::move(p.content)};
        for (const tmpl::OutputCall& c : m_calls)
            if (!c.name.empty()) out.answer += toolCallText(c.name, c.arguments);
        m_calls.clear();
        return out;
    }
    return {};
}

void ReplyReader::collect(const std::vector<tmpl::OutputCall>& pieces) {
    for (const tmpl::OutputCall& piece : pieces) {
        if (piece.index < 0 || piece.index >= 128) continue;
        if (m_calls.size() <= size_t(piece.index)) m_calls.resize(size_t(piece.index) + 1);
        tmpl::OutputCall& call = m_calls[size_t(piece.index)];
        if (!piece.name.empty()) call.name = piece.name;
        call.arguments += piece.arguments;
    }
}

std::string toolCallText(std::string_view name, std::string_view arguments) {
    const QJsonDocument args = QJsonDocument::fromJson(QByteArray(arguments.data(), qsizetype(arguments.size())));
    const QByteArray argsText = args.isObject() ? args.toJson(QJsonDocument::Compact) : QByteArrayLiteral("{}");
    QByteArray head = QJsonDocument(QJsonObject{{QStringLiteral("name"), QString::fromUtf8(name.data(), qsizetype(name.size()))}})
                          .toJson(QJsonDocument::Compact);
    head.chop(1); // the closing brace: the arguments follow inside the same object
    return "\n<tool_call>\n" + head.toStdString() + ", \"arguments\": " + argsText.toStdString() + "}\n</tool_call>";
}

} // namespace hearth::app
