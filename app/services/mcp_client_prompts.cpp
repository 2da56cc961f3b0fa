// An MCP server's prompts (see mcp_client.h): prompts/list page by page, prompts/get filled in
// with the user's arguments, each answered with the caller's ticket.
#include "services/mcp_client.h"

#include <QJsonArray>
#include <QTimer>

namespace hearth::app {

namespace {

constexpr int kMaxPrompts = 1000;
constexpr int kMaxArguments = 64;

McpPrompt promptFrom(const QJsonObject& o) {
    McpPrompt p{o.value(QStringLiteral("name")).toString(), o.value(QStringLiteral("title")).toString(),
                o.value(QStringLiteral("description")).toString(), {}};
    for (const QJsonValue& v : o.value(QStringLiteral("arguments")).toArray()) {
        const QJsonObject a = v.toObject();
        const QString name = a.value(QStringLiteral("name")).toString();
        if (name.isEmpty() || p.arguments.size() >= kMaxArguments) continue;
        p.arguments << McpPromptArgument{name, a.value(QStringLiteral("description")).toString(),
                                         a.value(QStringLiteral("required")).toBool()};
    }
    return p;
}

// A message's content as text: text as is, an embedded resource's text, other parts named.
QString contentText(const QJsonObject& content) {
    const QString type = content.value(QStringLiteral("type")).toString();
    if (type == QStringLiteral("text")) return content.value(QStringLiteral("text")).toString();
    if (type == QStringLiteral("resource")) {
        const QJsonObject r = content.value(QStringLiteral("resource")).toObject();
        if (r.contains(QStringLiteral("text"))) return r.value(QStringLiteral("text")).toString();
        return QStringLiteral("[binary %1]").arg(r.value(QStringLiteral("uri")).toString());
    }
    if (type == QStringLiteral("resource_link"))
        return QStringLiteral("[%1]").arg(content.value(QStringLiteral("uri")).toString());
    return QStringLiteral("[%1]").arg(type.isEmpty() ? QStringLiteral("content") : type);
}

} // namespace

quint64 McpClient::listPrompts() {
    if (m_state != State::Ready) return refuseLater(&McpClient::promptFailed, QStringLiteral("the server is not running"));
    if (!m_offersPrompts) return refuseLater(&McpClient::promptFailed, QStringLiteral("the server offers no prompts"));
    const quint64 ticket = m_nextId++; // the caller's; each page's request has an id of its own
    listPromptPage(ticket, {}, {});
    return ticket;
}

void McpClient::listPromptPage(quint64 ticket, const QString& cursor, QList<McpPrompt> sofar) {
    QJsonObject params;
    if (!cursor.isEmpty()) params.insert(QStringLiteral("cursor"), cursor);
    request(QStringLiteral("prompts/list"), params, m_callTimeoutMs,
            [this, ticket, sofar, cursor](const QJsonObject& result, const QString& error) mutable {
                if (!error.isEmpty()) return Q_EMIT promptFailed(ticket, QStringLiteral("prompts/list: %1").arg(error));
                for (const QJsonValue& v : result.value(QStringLiteral("prompts")).toArray()) {
                    const McpPrompt p = promptFrom(v.toObject());
                    if (!p.name.isEmpty() && sofar.size() < kMaxPrompts) sofar << p;
                }
                const QString next = result.value(QStringLiteral("nextCursor")).toString();
                if (!next.isEmpty() && next != cursor && sofar.size() < kMaxPrompts)
                    return listPromptPage(ticket, next, sofar);
                Q_EMIT promptsListed(ticket, sofar);
            });
}

quint64 McpClient::getPrompt(const QString& name, const QJsonObject& arguments) {
    if (m_state != State::Ready) return refuseLater(&McpClient::promptFailed, QStringLiteral("the server is not running"));
    if (!m_offersPrompts) return refuseLater(&McpClient::promptFailed, QStringLiteral("the server offers no prompts"));
    for (auto it = arguments.begin(); it != arguments.end(); ++it)
        if (!it.value().isString())
            return refuseLater(&McpClient::promptFailed, QStringLiteral("argument %1 is not a string").arg(it.key()));
    QJsonObject params{{QStringLiteral("name"), name}};
    if (!arguments.isEmpty()) params.insert(QStringLiteral("arguments"), arguments);
    const quint64 ticket = m_nextId; // the id request() gives it
    request(QStringLiteral("prompts/get"), params, m_callTimeoutMs,
            [this, ticket, name](const QJsonObject& result, const QString& error) {
                if (!error.isEmpty()) return Q_EMIT promptFailed(ticket, error);
                QList<McpPromptMessage> messages;
                for (const QJsonValue& v : result.value(QStringLiteral("messages")).toArray()) {
                    const QJsonObject m = v.toObject();
                    const QString role = m.value(QStringLiteral("role")).toString();
                    if (role != QStringLiteral("user") && role != QStringLiteral("assistant")) continue;
                    messages << McpPromptMessage{role, contentText(m.value(QStringLiteral("content")).toObject())};
                }
                if (messages.isEmpty()) return Q_EMIT promptFailed(ticket, QStringLiteral("%1 has no messages").arg(name));
                Q_EMIT promptGot(ticket, name, messages);
            });
    return ticket;
}

} // namespace hearth::app
