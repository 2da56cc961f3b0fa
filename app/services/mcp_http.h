// MCP's streamable HTTP transport for McpClient: each JSON-RPC message is POSTed to the server's
// endpoint; a request's answer comes back as JSON or as a server-sent event stream (which may
// carry the server's own requests and notifications first). The session id the server gives at
// initialize goes with every later message, and the session is ended with DELETE on close.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QUrl>

class QNetworkAccessManager;
class QNetworkReply;

namespace hearth::app {

class McpHttpTransport : public QObject {
    Q_OBJECT
public:
    McpHttpTransport(QUrl url, QHash<QString, QString> headers, qint64 maxMessageBytes, QObject* parent = nullptr);
    ~McpHttpTransport() override;

    // Sends one message; `requestId` is the JSON-RPC id of a request (0 for a notification or a
    // response), whose failure to arrive is reported as requestFailed.
    void post(const QJsonObject& message, quint64 requestId);
    // The protocol version agreed at initialize, sent as MCP-Protocol-Version from then on.
    void setProtocolVersion(const QString& version) { m_protocolVersion = version.toUtf8(); }
    // Ends the session (DELETE, not waited for) and drops the replies in flight.
    void close();

Q_SIGNALS:
    void received(const QJsonObject& message);
    void requestFailed(quint64 requestId, const QString& why);
    // The server broke the protocol (malformed or oversize messages, its session gone).
    void broken(const QString& why);

private:
    struct InFlight {
        quint64 id = 0;
        QByteArray buffer;    // bytes not yet read as whole events (SSE) or the whole body (JSON)
        bool answered = false; // the request's response came
    };
    void onReadyRead(QNetworkReply* reply);
    void onFinished(QNetworkReply* reply);
    // Reads complete events from an event stream's buffer; false when the server broke the protocol.
    bool readEvents(InFlight& f, bool atEnd);
    bool deliver(const QByteArray& json, InFlight& f);

    QNetworkAccessManager* m_net;
    QUrl m_url;
    QHash<QString, QString> m_headers;
    qint64 m_maxMessageBytes;
    QByteArray m_session;
    QByteArray m_protocolVersion;
    QHash<QNetworkReply*, InFlight> m_inFlight;
    quint64 m_closeCount = 0; // close() calls, to notice one made while delivering
};

} // namespace hearth::app
