// The chat template request of the app's chats and the reader that splits replies, both on the
// engine's public readers (hearth/chat_output.h), the same ones the API server uses.
#include "services/chat_reply.h"

#include <QJsonDocument>

namespace hearth::app {

ReplyFormat replyFormatFor(std::string_view renderedPrompt) {
    if (tmpl::promptIsHarmony(renderedPrompt)) return ReplyFormat::Harmony;
    if (tmpl::promptOpensReasoning(renderedPrompt)) return ReplyFormat::ThinkOpened;
    return ReplyFormat::Think;
}

tmpl::ChatRequest chatRequestFor(const QList<ChatMessage>& messages, const QJsonArray& tools) {
    tmpl::ChatRequest chat;
    for (const ChatMessage& m : messages) {
        nlohmann::ordered_json message = {{"role", m.role.toStdString()}, {"content", m.content.toStdString()}};
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
        return {std::move(p.reasoning), std::move(p.content)};
    }
    return {};
}

} // namespace hearth::app
