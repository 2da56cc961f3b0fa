// An MCP server's resources (see mcp_client.h): resources/list page by page, resources/read as
// text, each answered with the caller's ticket.
#include "services/mcp_client.h"

#include <QJsonArray>
#include <QTimer>

namespace hearth::app {

namespace {

constexpr int kMaxResources = 1000;

McpResource resourceFrom(const QJsonObject& o) {
    return McpResource{o.value(QStringLiteral("uri")).toString(), o.value(QStringLiteral("name")).toString(),
                       o.value(QStringLiteral("title")).toString(), o.value(QStringLiteral("description")).toString(),
                       o.value(QStringLiteral("mimeType")).toString()};
}

} // namespace

quint64 McpClient::listResources() {
    if (m_state != State::Ready) return refuseLater(&McpClient::resourceFailed, QStringLiteral("the server is not running"));
    if (!m_offersResources) return refuseLater(&McpClient::resourceFailed, QStringLiteral("the server offers no resources"));
    const quint64 ticket = m_nextId++; // the caller's; each page's request has an id of its own
    listResourcePage(ticket, {}, {});
    return ticket;
}

void McpClient::listResourcePage(quint64 ticket, const QString& cursor, QList<McpResource> sofar) {
    QJsonObject params;
    if (!cursor.isEmpty()) params.insert(QStringLiteral("cursor"), cursor);
    request(QStringLiteral("resources/list"), params, m_callTimeoutMs,
            [this, ticket, sofar, cursor](const QJsonObject& result, const QString& error) mutable {
                if (!error.isEmpty()) return Q_EMIT resourceFailed(ticket, QStringLiteral("resources/list: %1").arg(error));
                for (const QJsonValue& v : result.value(QStringLiteral("resources")).toArray()) {
                    const McpResource r = resourceFrom(v.toObject());
                    if (!r.uri.isEmpty() && sofar.size() < kMaxResources) sofar << r;
                }
                const QString next = result.value(QStringLiteral("nextCursor")).toString();
                if (!next.isEmpty() && next != cursor && sofar.size() < kMaxResources)
                    return listResourcePage(ticket, next, sofar);
                Q_EMIT resourcesListed(ticket, sofar);
            });
}

quint64 McpClient::readResource(const QString& uri) {
    if (m_state != State::Ready) return refuseLater(&McpClient::resourceFailed, QStringLiteral("the server is not running"));
    if (!m_offersResources) return refuseLater(&McpClient::resourceFailed, QStringLiteral("the server offers no resources"));
    const quint64 ticket = m_nextId; // the id request() gives it
    request(QStringLiteral("resources/read"), QJsonObject{{QStringLiteral("uri"), uri}}, m_callTimeoutMs,
            [this, ticket, uri](const QJsonObject& result, const QString& error) {
                if (!error.isEmpty()) return Q_EMIT resourceFailed(ticket, error);
                QStringList parts;
                for (const QJsonValue& v : result.value(QStringLiteral("contents")).toArray()) {
                    const QJsonObject part = v.toObject();
                    if (part.contains(QStringLiteral("text"))) parts << part.value(QStringLiteral("text")).toString();
                    else parts << QStringLiteral("[binary %1]").arg(part.value(QStringLiteral("mimeType")).toString(QStringLiteral("data")));
                }
                if (parts.isEmpty()) return Q_EMIT resourceFailed(ticket, QStringLiteral("%1 has no contents").arg(uri));
                Q_EMIT resourceRead(ticket, uri, parts.join(QStringLiteral("\n\n")));
            });
    return ticket;
}

} // namespace hearth::app
