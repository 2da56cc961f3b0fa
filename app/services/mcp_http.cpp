// MCP over streamable HTTP: POSTed messages, JSON or event-stream answers (see mcp_http.h).
#include "services/mcp_http.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace hearth::app {

namespace {

QString bodyPreview(const QByteArray& bytes) {
    QString s = QString::fromUtf8(bytes.left(160)).simplified();
    if (bytes.size() > 160) s += QStringLiteral("…");
    return s;
}

} // namespace

McpHttpTransport::McpHttpTransport(QUrl url, QHash<QString, QString> headers, qint64 maxMessageBytes, QObject* parent)
    : QObject(parent), m_net(new QNetworkAccessManager(this)), m_url(std::move(url)), m_headers(std::move(headers)),
      m_maxMessageBytes(maxMessageBytes) {}

McpHttpTransport::~McpHttpTransport() {
    for (auto it = m_inFlight.begin(); it != m_inFlight.end(); ++it) {
        it.key()->disconnect(this);
        it.key()->abort();
    }
}

void McpHttpTransport::post(const QJsonObject& message, quint64 requestId) {
    QNetworkRequest request(m_url);
    request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArray("application/json"));
    request.setRawHeader("Accept", "application/json, text/event-stream");
    for (auto it = m_headers.begin(); it != m_headers.end(); ++it) request.setRawHeader(it.key().toUtf8(), it.value().toUtf8());
    if (!m_session.isEmpty()) request.setRawHeader("Mcp-Session-Id", m_session);
    if (!m_protocolVersion.isEmpty()) request.setRawHeader("MCP-Protocol-Version", m_protocolVersion);
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    QNetworkReply* reply = m_net->post(request, QJsonDocument(message).toJson(QJsonDocument::Compact));
    InFlight f;
    f.id = requestId;
    m_inFlight.insert(reply, f);
    connect(reply, &QNetworkReply::readyRead, this, [this, reply] { onReadyRead(reply); });
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onFinished(reply); });
}

void McpHttpTransport::close() {
    ++m_closeCount;
    const QList<QNetworkReply*> replies = m_inFlight.keys();
    m_inFlight.clear();
    for (QNetworkReply* r : replies) {
        r->disconnect(this);
        r->abort();
        r->deleteLater();
    }
    if (m_session.isEmpty()) return;
    QNetworkRequest request(m_url);
    request.setRawHeader("Mcp-Session-Id", m_session);
    for (auto it = m_headers.begin(); it != m_headers.end(); ++it) request.setRawHeader(it.key().toUtf8(), it.value().toUtf8());
    QNetworkReply* bye = m_net->deleteResource(request);
    connect(bye, &QNetworkReply::finished, bye, &QObject::deleteLater);
    m_session.clear();
}

void McpHttpTransport::onReadyRead(QNetworkReply* reply) {
    if (!m_inFlight.contains(reply)) return;
    if (m_session.isEmpty() && reply->hasRawHeader("Mcp-Session-Id")) m_session = reply->rawHeader("Mcp-Session-Id");
    const bool stream = reply->header(QNetworkRequest::ContentTypeHeader).toString().startsWith(QStringLiteral("text/event-stream"));
    // Worked on outside the table: what it delivers may close this transport.
    InFlight f = m_inFlight.take(reply);
    const quint64 generation = m_closeCount;
    f.buffer += reply->readAll();
    if (f.buffer.size() > m_maxMessageBytes + 4096) {
        Q_EMIT broken(QStringLiteral("the server sent a message over %1 MiB").arg(double(m_maxMessageBytes) / double(1 << 20), 0, 'g', 3));
        return;
    }
    if (stream && !readEvents(f, false)) return;
    if (generation == m_closeCount) m_inFlight.insert(reply, f);
}

bool McpHttpTransport::readEvents(InFlight& f, bool atEnd) {
    f.buffer.replace("\r\n", "\n");
    for (;;) {
        qsizetype end = f.buffer.indexOf("\n\n");
        if (end < 0) {
            if (!atEnd || f.buffer.trimmed().isEmpty()) return true;
            end = f.buffer.size();
        }
        const QByteArray event = f.buffer.left(end);
        f.buffer.remove(0, std::min(f.buffer.size(), end + 2));
        QByteArray data;
        for (const QByteArray& line : event.split('\n')) {
            if (!line.startsWith("data:")) continue; // event:, id:, retry: and comments
            QByteArray value = line.mid(5);
            if (value.startsWith(' ')) value.remove(0, 1);
            if (!data.isEmpty()) data += '\n';
            data += value;
        }
        if (!data.isEmpty() && !deliver(data, f)) return false;
    }
}

bool McpHttpTransport::deliver(const QByteArray& json, InFlight& f) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    QJsonArray messages;
    if (error.error == QJsonParseError::NoError && doc.isObject()) messages.append(doc.object());
    else if (error.error == QJsonParseError::NoError && doc.isArray()) messages = doc.array();
    if (messages.isEmpty()) {
        Q_EMIT broken(QStringLiteral("the server answered with something that is not JSON-RPC: %1").arg(bodyPreview(json)));
        return false;
    }
    const quint64 generation = m_closeCount;
    for (const QJsonValue& v : messages) {
        const QJsonObject m = v.toObject();
        if (f.id != 0 && m.value(QStringLiteral("id")).toInteger(-1) == qint64(f.id) && !m.contains(QStringLiteral("method")))
            f.answered = true;
        Q_EMIT received(m);
        if (generation != m_closeCount) return false; // closed by what it received
    }
    return true;
}

void McpHttpTransport::onFinished(QNetworkReply* reply) {
    reply->deleteLater();
    auto it = m_inFlight.find(reply);
    if (it == m_inFlight.end()) return;
    if (m_session.isEmpty() && reply->hasRawHeader("Mcp-Session-Id")) m_session = reply->rawHeader("Mcp-Session-Id");
    InFlight f = *it;
    m_inFlight.erase(it);
    f.buffer += reply->readAll();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status == 404 && !m_session.isEmpty()) {
        m_session.clear();
        Q_EMIT broken(QStringLiteral("the server ended the session (HTTP 404)"));
        return;
    }
    if (status >= 400 || (status == 0 && reply->error() != QNetworkReply::NoError)) {
        const QString why = status > 0 ? QStringLiteral("HTTP %1 from %2: %3").arg(status).arg(m_url.toString(), bodyPreview(f.buffer))
                                       : QStringLiteral("%1: %2").arg(m_url.toString(), reply->errorString());
        if (f.id != 0) Q_EMIT requestFailed(f.id, why);
        return;
    }
    if (f.buffer.size() > m_maxMessageBytes) {
        Q_EMIT broken(QStringLiteral("the server sent a message over %1 MiB").arg(double(m_maxMessageBytes) / double(1 << 20), 0, 'g', 3));
        return;
    }
    const bool stream = reply->header(QNetworkRequest::ContentTypeHeader).toString().startsWith(QStringLiteral("text/event-stream"));
    if (!f.buffer.trimmed().isEmpty()) {
        const bool ok = stream ? readEvents(f, true) : deliver(f.buffer, f);
        if (!ok) return;
    }
    if (f.id != 0 && !f.answered)
        Q_EMIT requestFailed(f.id, QStringLiteral("the server closed its answer without a reply (HTTP %1)").arg(status));
}

} // namespace hearth::app
