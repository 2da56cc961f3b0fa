// The chat template request of the app's chats and the reader that splits replies, both on the
// engine's public readers (hearth/chat_output.h), the same ones the API server uses.
#include "services/chat_reply.h"

#include "services/chat_documents.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace hearth::app {

ReplyFormat replyFormatFor(std::string_view renderedPrompt) {
    if (tmpl::promptIsHarmony(renderedPrompt)) return ReplyFormat::Harmony;
    if (tmpl::promptOpensReasoning(renderedPrompt)) return ReplyFormat::ThinkOpened;
    return ReplyFormat::Think;
}

namespace {

// A call's arguments as the template request carries them (JSON text): an object as written, any
// other text as a JSON string, nothing as an empty mapping.
std::string templateArguments(const QString& arguments) {
    if (arguments.isEmpty()) return std::string();
    const QByteArray utf8 = arguments.toUtf8();
    if (QJsonDocument::fromJson(utf8).isObject()) return utf8.toStdString();
    QByteArray quoted = QJsonDocument(QJsonArray{arguments}).toJson(QJsonDocument::Compact);
    return quoted.mid(1, quoted.size() - 2).toStdString(); // ["..."] without the brackets
}

} // namespace

tmpl::ChatRequest chatRequestFor(const QList<ChatMessage>& messages, const QJsonArray& tools) {
    tmpl::ChatRequest chat;
    for (const ChatMessage& m : messages) {
        tmpl::ChatMessage message;
        message.role = m.role.toStdString();
        message.content = messageTextForModel(m.content, m.documents).toStdString();
        if (m.role == QStringLiteral("assistant")) message.reasoning = m.reasoning.toStdString();
        for (const ChatToolCall& c : m.toolCalls)
            message.toolCalls.push_back({c.id.toStdString(), c.name.toStdString(), templateArguments(c.arguments)});
        if (m.role == QStringLiteral("tool")) message.toolCallId = m.toolCallId.toStdString();
        chat.messages.push_back(std::move(message));
    }
    if (!tools.isEmpty()) chat.toolsJson = QJsonDocument(tools).toJson(QJsonDocument::Compact).toStdString();
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
