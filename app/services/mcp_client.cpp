// An MCP server over stdio (newline-delimited JSON-RPC 2.0 with a child process) or streamable HTTP
// (mcp_http.cpp); see mcp_client.h.
#include "services/mcp_client.h"

#include "services/mcp_http.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTimer>

namespace hearth::app {

namespace {

constexpr qsizetype kStderrKept = 4096; // the server's last words, for error messages

QString linePreview(const QByteArray& bytes) {
    QString s = QString::fromUtf8(bytes.left(120)).simplified();
    if (bytes.size() > 120) s += QStringLiteral("…");
    return s;
}

QString mcpMegabytes(qint64 bytes) { return QString::number(double(bytes) / double(1 << 20), 'g', 3); }

McpTool toolFrom(const QJsonObject& o) {
    McpTool t;
    t.name = o.value(QStringLiteral("name")).toString();
    t.title = o.value(QStringLiteral("title")).toString();
    t.description = o.value(QStringLiteral("description")).toString();
    t.inputSchema = o.value(QStringLiteral("inputSchema")).toObject();
    t.readOnly = o.value(QStringLiteral("annotations")).toObject().value(QStringLiteral("readOnlyHint")).toBool();
    return t;
}

McpToolResult resultFrom(const QJsonObject& result) {
    McpToolResult r;
    r.content = result.value(QStringLiteral("content")).toArray();
    r.isError = result.value(QStringLiteral("isError")).toBool();
    QStringList parts;
    for (const QJsonValue& v : r.content) {
        const QJsonObject part = v.toObject();
        const QString type = part.value(QStringLiteral("type")).toString();
        if (type == QStringLiteral("text")) {
            parts << part.value(QStringLiteral("text")).toString();
        } else if (type == QStringLiteral("resource")) {
            const QJsonObject res = part.value(QStringLiteral("resource")).toObject();
            parts << (res.contains(QStringLiteral("text")) ? res.value(QStringLiteral("text")).toString()
                                                            : QStringLiteral("[resource %1]").arg(res.value(QStringLiteral("uri")).toString()));
        } else if (type == QStringLiteral("resource_link")) {
            parts << QStringLiteral("[link %1]").arg(part.value(QStringLiteral("uri")).toString());
        } else {
            parts << QStringLiteral("[%1]").arg(type.isEmpty() ? QStringLiteral("unknown part") : type);
        }
    }
    if (parts.isEmpty() && result.contains(QStringLiteral("structuredContent")))
        parts << QString::fromUtf8(QJsonDocument(result.value(QStringLiteral("structuredContent")).toObject())
                                       .toJson(QJsonDocument::Compact));
    r.text = parts.join(QStringLiteral("\n\n"));
    return r;
}

} // namespace

McpClient::McpClient(McpServerConfig config, QObject* parent) : QObject(parent), m_config(std::move(config)) {
    qRegisterMetaType<hearth::app::McpToolResult>();
    qRegisterMetaType<QList<hearth::app::McpTool>>();
    qRegisterMetaType<QList<hearth::app::McpResource>>();
    qRegisterMetaType<QList<hearth::app::McpPrompt>>();
    qRegisterMetaType<QList<hearth::app::McpPromptMessage>>();
}

McpClient::~McpClient() {
    // The running server and any stopped one still ending (children until they finish).
    const QList<QProcess*> processes = findChildren<QProcess*>(Qt::FindDirectChildrenOnly);
    for (QProcess* p : processes) {
        p->disconnect();
        if (p->state() == QProcess::NotRunning) continue;
        p->kill();
        p->waitForFinished(1000);
    }
}

void McpClient::start() {
    if (m_state == State::Starting || m_state == State::Ready) return;
    m_state = State::Starting;
    m_lastError.clear();
    m_stdout.clear();
    m_stderr.clear();
    m_tools.clear();
    if (m_config.disabled) {
        QTimer::singleShot(0, this, [this] { fail(QStringLiteral("the server is turned off in its settings")); });
        return;
    }
    if (m_config.isStdio()) startProcess();
    else startHttp();
    initialize();
}

void McpClient::startHttp() {
    m_http = new McpHttpTransport(m_config.url, m_config.headers, m_maxMessageBytes, this);
    connect(m_http, &McpHttpTransport::received, this, &McpClient::handleMessage);
    connect(m_http, &McpHttpTransport::broken, this, [this](const QString& why) { fail(why); });
    connect(m_http, &McpHttpTransport::requestFailed, this, [this](quint64 id, const QString& why) {
        if (std::optional<Pending> p = takePending(id)) p->reply({}, why);
    });
}

void McpClient::startProcess() {
    m_process = new QProcess(this);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (auto it = m_config.env.begin(); it != m_config.env.end(); ++it) env.insert(it.key(), it.value());
    m_process->setProcessEnvironment(env);
    if (!m_config.cwd.isEmpty()) m_process->setWorkingDirectory(m_config.cwd);
    QProcess* p = m_process;
    connect(p, &QProcess::readyReadStandardOutput, this, &McpClient::onStdout);
    connect(p, &QProcess::readyReadStandardError, this, &McpClient::onStderr);
    connect(p, &QProcess::finished, this,
            [this](int code, QProcess::ExitStatus status) { onExited(code, status == QProcess::CrashExit); });
    connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart && p == m_process)
            fail(QStringLiteral("could not start '%1': %2").arg(m_config.command, p->errorString()));
    });
    p->start(m_config.command, m_config.args);
}

void McpClient::initialize() {
    QJsonObject params;
    params.insert(QStringLiteral("protocolVersion"), QLatin1String(kProtocolVersion));
    params.insert(QStringLiteral("capabilities"), QJsonObject{});
    params.insert(QStringLiteral("clientInfo"),
                  QJsonObject{{QStringLiteral("name"), QStringLiteral("hearth")}, {QStringLiteral("version"), QStringLiteral("0.1")}});
    request(QStringLiteral("initialize"), params, m_startTimeoutMs, [this](const QJsonObject& result, const QString& error) {
        if (!error.isEmpty()) return fail(QStringLiteral("initialize: %1").arg(error));
        if (!result.value(QStringLiteral("protocolVersion")).isString())
            return fail(QStringLiteral("initialize: the reply names no protocol version"));
        const QJsonObject info = result.value(QStringLiteral("serverInfo")).toObject();
        m_serverTitle = info.value(QStringLiteral("title")).toString(info.value(QStringLiteral("name")).toString());
        m_offersResources = result.value(QStringLiteral("capabilities")).toObject().contains(QStringLiteral("resources"));
        m_offersPrompts = result.value(QStringLiteral("capabilities")).toObject().contains(QStringLiteral("prompts"));
        if (m_http) m_http->setProtocolVersion(result.value(QStringLiteral("protocolVersion")).toString());
        notify(QStringLiteral("notifications/initialized"));
        listTools({}, {}, true);
    });
}

void McpClient::listTools(const QString& cursor, QList<McpTool> sofar, bool initial) {
    QJsonObject params;
    if (!cursor.isEmpty()) params.insert(QStringLiteral("cursor"), cursor);
    request(QStringLiteral("tools/list"), params, initial ? m_startTimeoutMs : m_callTimeoutMs,
            [this, sofar, initial](const QJsonObject& result, const QString& error) mutable {
                if (!error.isEmpty()) {
                    if (initial) fail(QStringLiteral("tools/list: %1").arg(error));
                    return; // a later listing that fails keeps the tools known
                }
                for (const QJsonValue& v : result.value(QStringLiteral("tools")).toArray()) {
                    const McpTool t = toolFrom(v.toObject());
                    if (!t.name.isEmpty() && sofar.size() < 1000) sofar << t;
                }
                const QString next = result.value(QStringLiteral("nextCursor")).toString();
                if (!next.isEmpty() && next != result.value(QStringLiteral("cursor")).toString() && sofar.size() < 1000)
                    return listTools(next, sofar, initial);
                m_tools = sofar;
                if (initial) {
                    m_state = State::Ready;
                    Q_EMIT ready(m_tools);
                } else {
                    Q_EMIT toolsChanged(m_tools);
                }
            });
}

quint64 McpClient::refuseLater(void (McpClient::*failed)(quint64, const QString&), const QString& why) {
    const quint64 ticket = m_nextId++;
    QTimer::singleShot(0, this, [this, failed, ticket, why] { (this->*failed)(ticket, why); });
    return ticket;
}

quint64 McpClient::callTool(const QString& name, const QJsonObject& arguments) {
    if (m_state != State::Ready) {
        const quint64 ticket = m_nextId++;
        const QString why = m_lastError.isEmpty() ? QStringLiteral("the server is not running")
                                                  : QStringLiteral("the server is not running (%1)").arg(m_lastError);
        QTimer::singleShot(0, this, [this, ticket, why] { Q_EMIT toolFailed(ticket, why); });
        return ticket;
    }
    QJsonObject params{{QStringLiteral("name"), name}, {QStringLiteral("arguments"), arguments}};
    const quint64 ticket = m_nextId; // the id request() gives it
    request(QStringLiteral("tools/call"), params, m_callTimeoutMs,
            [this, ticket](const QJsonObject& result, const QString& error) {
                if (!error.isEmpty()) Q_EMIT toolFailed(ticket, error);
                else Q_EMIT toolResult(ticket, resultFrom(result));
            });
    return ticket;
}

void McpClient::stop() {
    m_state = State::Stopped;
    failPending(QStringLiteral("the server was stopped"));
    closeHttp();
    if (QProcess* p = std::exchange(m_process, nullptr)) {
        p->disconnect(this);
        if (p->state() == QProcess::NotRunning) {
            p->deleteLater();
        } else {
            // Closing stdin asks it to end; then SIGTERM, and SIGKILL if it lingers.
            connect(p, &QProcess::finished, p, &QObject::deleteLater);
            p->closeWriteChannel();
            p->terminate();
            QTimer::singleShot(2000, p, [p] { p->kill(); });
        }
    }
}

void McpClient::closeHttp() {
    if (McpHttpTransport* h = std::exchange(m_http, nullptr)) {
        h->disconnect(this);
        h->close();
        h->deleteLater();
    }
}

void McpClient::send(const QJsonObject& message) {
    if (m_http) {
        const bool isRequest = message.contains(QStringLiteral("method")) && message.contains(QStringLiteral("id"));
        m_http->post(message, isRequest ? quint64(message.value(QStringLiteral("id")).toInteger()) : 0);
        return;
    }
    if (!m_process) return;
    QByteArray line = QJsonDocument(message).toJson(QJsonDocument::Compact);
    line += '\n';
    m_process->write(line);
}

quint64 McpClient::request(const QString& method, const QJsonObject& params, int timeoutMs, Reply reply) {
    const quint64 id = m_nextId++;
    QJsonObject message{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
                        {QStringLiteral("id"), qint64(id)},
                        {QStringLiteral("method"), method}};
    if (!params.isEmpty()) message.insert(QStringLiteral("params"), params);
    Pending pending;
    pending.reply = std::move(reply);
    pending.method = method;
    pending.timer = new QTimer(this);
    pending.timer->setSingleShot(true);
    connect(pending.timer, &QTimer::timeout, this, [this, id, timeoutMs] {
        std::optional<Pending> p = takePending(id);
        if (!p) return;
        // The server is told to drop it, as the protocol asks.
        notify(QStringLiteral("notifications/cancelled"),
               QJsonObject{{QStringLiteral("requestId"), qint64(id)}, {QStringLiteral("reason"), QStringLiteral("timed out")}});
        p->reply({}, QStringLiteral("no answer within %1 s").arg(timeoutMs / 1000.0, 0, 'g', 3));
    });
    pending.timer->start(timeoutMs);
    m_pending.insert(id, pending);
    send(message);
    return id;
}

void McpClient::notify(const QString& method, const QJsonObject& params) {
    QJsonObject message{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("method"), method}};
    if (!params.isEmpty()) message.insert(QStringLiteral("params"), params);
    send(message);
}

void McpClient::onStdout() {
    if (!m_process) return;
    m_stdout += m_process->readAllStandardOutput();
    qsizetype start = 0;
    for (;;) {
        const qsizetype end = m_stdout.indexOf('\n', start);
        if (end < 0) break;
        if (end - start > m_maxMessageBytes)
            return fail(QStringLiteral("the server sent a message over %1 MiB").arg(mcpMegabytes(m_maxMessageBytes)));
        const QByteArray line = m_stdout.mid(start, end - start).trimmed();
        start = end + 1;
        if (line.isEmpty()) continue;
        QJsonParseError error{};
        const QJsonDocument doc = QJsonDocument::fromJson(line, &error);
        if (error.error != QJsonParseError::NoError || !doc.isObject())
            return fail(QStringLiteral("the server wrote something that is not JSON-RPC on stdout: %1").arg(linePreview(line)));
        handleMessage(doc.object());
        if (!m_process) return; // the message ended it
    }
    m_stdout.remove(0, start);
    if (m_stdout.size() > m_maxMessageBytes)
        fail(QStringLiteral("the server sent a message over %1 MiB").arg(mcpMegabytes(m_maxMessageBytes)));
}

void McpClient::onStderr() {
    if (!m_process) return;
    m_stderr += m_process->readAllStandardError();
    if (m_stderr.size() > kStderrKept) m_stderr = m_stderr.right(kStderrKept);
}

void McpClient::handleMessage(const QJsonObject& message) {
    const QJsonValue id = message.value(QStringLiteral("id"));
    const QString method = message.value(QStringLiteral("method")).toString();
    if (!method.isEmpty()) {
        if (id.isUndefined() || id.isNull()) { // a notification
            if (method == QStringLiteral("notifications/tools/list_changed") && m_state == State::Ready)
                listTools({}, {}, false);
            return;
        }
        // A request from the server: ping is answered, the rest (sampling, roots, elicitation)
        // are capabilities this client did not announce.
        QJsonObject reply{{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), id}};
        if (method == QStringLiteral("ping"))
            reply.insert(QStringLiteral("result"), QJsonObject{});
        else
            reply.insert(QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), -32601},
                                                              {QStringLiteral("message"), QStringLiteral("method not found")}});
        send(reply);
        return;
    }
    if (!id.isDouble()) return; // a response to nothing this client sent
    std::optional<Pending> p = takePending(quint64(id.toInteger()));
    if (!p) return; // timed out already, or not ours
    if (message.contains(QStringLiteral("error"))) {
        const QJsonObject e = message.value(QStringLiteral("error")).toObject();
        const QString text = e.value(QStringLiteral("message")).toString(QStringLiteral("an error without a message"));
        p->reply({}, QStringLiteral("%1 (code %2)").arg(text).arg(e.value(QStringLiteral("code")).toInteger()));
    } else if (!message.value(QStringLiteral("result")).isObject()) {
        p->reply({}, QStringLiteral("the reply to %1 has no result object").arg(p->method));
    } else {
        p->reply(message.value(QStringLiteral("result")).toObject(), {});
    }
}

void McpClient::onExited(int code, bool crashed) {
    if (m_state != State::Starting && m_state != State::Ready) return;
    onStderr();
    fail(crashed ? QStringLiteral("the server crashed") : QStringLiteral("the server exited with code %1").arg(code));
}

QString McpClient::withStderr(const QString& why) const {
    const QString tail = QString::fromUtf8(m_stderr).trimmed();
    if (tail.isEmpty()) return why;
    const QStringList lines = tail.split(QLatin1Char('\n'));
    return QStringLiteral("%1; it said: %2").arg(why, lines.mid(std::max<qsizetype>(0, lines.size() - 3)).join(QStringLiteral(" / ")));
}

std::optional<McpClient::Pending> McpClient::takePending(quint64 id) {
    auto it = m_pending.find(id);
    if (it == m_pending.end()) return std::nullopt;
    Pending p = *it;
    m_pending.erase(it);
    p.timer->stop();
    p.timer->deleteLater();
    return p;
}

void McpClient::failPending(const QString& why) {
    const QHash<quint64, Pending> pending = std::exchange(m_pending, {});
    for (auto it = pending.begin(); it != pending.end(); ++it) {
        it->timer->stop();
        it->timer->deleteLater();
        it->reply({}, why);
    }
}

void McpClient::fail(const QString& why) {
    if (m_state == State::Failed || m_state == State::Stopped) return;
    m_lastError = withStderr(why);
    const bool wasStarting = m_state == State::Starting;
    // Stopped first, so that the pending replies (a failed initialize) do not fail twice.
    m_state = State::Stopped;
    closeHttp();
    if (QProcess* p = std::exchange(m_process, nullptr)) {
        p->disconnect(this);
        p->kill();
        connect(p, &QProcess::finished, p, &QObject::deleteLater);
        if (p->state() == QProcess::NotRunning) p->deleteLater();
    }
    failPending(wasStarting ? QStringLiteral("the server did not start: %1").arg(m_lastError) : m_lastError);
    m_state = State::Failed;
    Q_EMIT failed(m_lastError);
}

} // namespace hearth::app
