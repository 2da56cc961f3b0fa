// The chat template request of the app's chats and the reader that splits replies, both on the
// engine's public readers (hearth/chat_output.h), the same ones the API server uses.
#include "services/chat_reply.h"

namespace hearth::app {

ReplyFormat replyFormatFor(std::string_view renderedPrompt) {
    if (tmpl::promptIsHarmony(renderedPrompt)) return ReplyFormat::Harmony;
    if (tmpl::promptOpensReasoning(renderedPrompt)) return ReplyFormat::ThinkOpened;
    return ReplyFormat::Think;
}

tmpl::ChatRequest chatRequestFor(const QList<ChatMessage>& messages) {
    tmpl::ChatRequest chat;
    for (const ChatMessage& m : messages) {
        nlohmann::ordered_json message = {{"role", m.role.toStdString()}, {"content", m.content.toStdString()}};
        if (m.role == QStringLiteral("assistant") && !m.reasoning.isEmpty())
            message["reasoning_content"] = m.reasoning.toStdString();
        chat.messages.push_back(std::move(message));
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
