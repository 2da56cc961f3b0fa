// The app's MCP servers, their tools' settings and call routing (see mcp_host.h).
#include "services/mcp_host.h"

#include "services/json_file.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QTimer>

namespace hearth::app {

namespace {

QString settingsKey(const QString& server, const QString& tool) { return server + QLatin1Char('/') + tool; }

QString approvalName(McpApproval a) {
    switch (a) {
    case McpApproval::Always: return QStringLiteral("always");
    case McpApproval::Never: return QStringLiteral("never");
    case McpApproval::Ask: break;
    }
    return QStringLiteral("ask");
}

McpApproval approvalFrom(const QString& s) {
    if (s == QStringLiteral("always")) return McpApproval::Always;
    if (s == QStringLiteral("never")) return McpApproval::Never;
    return McpApproval::Ask;
}

} // namespace

QString mcpModelToolName(const QString& server, const QString& tool) {
    QString name = server + QStringLiteral("__") + tool;
    for (QChar& c : name)
        if (!(c.isLetterOrNumber() && c.unicode() < 128) && c != QLatin1Char('_') && c != QLatin1Char('-'))
            c = QLatin1Char('_');
    return name.left(64);
}

McpHost::McpHost(QString dataDir, QObject* parent) : QObject(parent), m_dataDir(std::move(dataDir)) {
    load();
    rebuildClients();
}

McpHost::~McpHost() { stopAll(); }

void McpHost::load() {
    m_servers.clear();
    m_configErrors.clear();
    m_configDamaged = false;
    QFile f(QDir(m_dataDir).filePath(QStringLiteral("mcp.json")));
    if (f.exists()) {
        if (!f.open(QIODevice::ReadOnly)) {
            m_configErrors << QStringLiteral("%1 cannot be read: %2").arg(f.fileName(), f.errorString());
            m_configDamaged = true;
        } else {
            const McpConfigParse p = parseMcpServers(f.read(4 << 20));
            m_servers = p.servers;
            m_configErrors = p.errors;
            m_configDamaged = p.servers.isEmpty() && !p.errors.isEmpty();
        }
    }
    QJsonObject tools;
    QString error;
    if (!readJsonObjectFile(QDir(m_dataDir).filePath(QStringLiteral("mcp-tools.json")), QStringLiteral("a tool settings file"),
                            &tools, &error))
        m_configErrors << error;
    const QJsonObject all = tools.value(QStringLiteral("tools")).toObject();
    for (auto it = all.begin(); it != all.end(); ++it) {
        const QJsonObject o = it.value().toObject();
        McpToolSettings s;
        s.enabled = o.value(QStringLiteral("enabled")).toBool(true);
        s.approval = approvalFrom(o.value(QStringLiteral("approval")).toString());
        m_toolSettings.insert(it.key(), s);
    }
}

bool McpHost::saveServers(QString* error) {
    const QString path = QDir(m_dataDir).filePath(QStringLiteral("mcp.json"));
    if (m_configDamaged && QFile::exists(path)) {
        // The user's damaged file is kept beside, never overwritten.
        const QString kept = path + QStringLiteral(".damaged");
        QFile::remove(kept);
        if (!QFile::rename(path, kept)) {
            if (error) *error = QStringLiteral("cannot keep the damaged %1 as %2").arg(path, kept);
            return false;
        }
        m_configDamaged = false;
    }
    return writeJsonObjectFile(path, mcpServersObject(m_servers), error);
}

bool McpHost::saveToolSettings(QString* error) {
    QJsonObject all;
    for (auto it = m_toolSettings.begin(); it != m_toolSettings.end(); ++it)
        all.insert(it.key(), QJsonObject{{QStringLiteral("enabled"), it->enabled},
                                         {QStringLiteral("approval"), approvalName(it->approval)}});
    return writeJsonObjectFile(QDir(m_dataDir).filePath(QStringLiteral("mcp-tools.json")),
                               QJsonObject{{QStringLiteral("tools"), all}}, error);
}

bool McpHost::setServers(const QList<McpServerConfig>& servers, QString* error) {
    QStringList names;
    for (const McpServerConfig& s : servers) {
        if (s.name.trimmed().isEmpty() || names.contains(s.name)) {
            if (error) *error = QStringLiteral("every server needs a name of its own ('%1')").arg(s.name);
            return false;
        }
        names << s.name;
    }
    m_servers = servers;
    if (!saveServers(error)) return false;
    m_configErrors.clear();
    rebuildClients();
    Q_EMIT toolsChanged();
    return true;
}

McpConfigParse McpHost::importServers(const QByteArray& json, QString* error) {
    McpConfigParse p = parseMcpServers(json);
    if (p.servers.isEmpty()) return p;
    QList<McpServerConfig> merged = m_servers;
    for (const McpServerConfig& s : p.servers) {
        auto it = std::find_if(merged.begin(), merged.end(), [&](const McpServerConfig& m) { return m.name == s.name; });
        if (it != merged.end()) *it = s;
        else merged << s;
    }
    QString why;
    if (!setServers(merged, &why)) {
        p.errors << why;
        if (error) *error = why;
    }
    return p;
}

McpConfigParse McpHost::importFile(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly) || f.size() > (4 << 20)) {
        McpConfigParse p;
        p.errors << (f.isOpen() ? QStringLiteral("%1 is over 4 MiB; not an MCP configuration").arg(path)
                                : QStringLiteral("%1 cannot be read: %2").arg(path, f.errorString()));
        if (error) *error = p.errors.first();
        return p;
    }
    return importServers(f.readAll(), error);
}

void McpHost::rebuildClients() {
    // Clients whose server is gone or changed stop; new ones are made (not started).
    for (auto it = m_clients.begin(); it != m_clients.end();) {
        auto same = std::find_if(m_servers.begin(), m_servers.end(),
                                 [&](const McpServerConfig& s) { return s == it.value()->config(); });
        if (same == m_servers.end()) {
            McpClient* c = it.value();
            c->stop();
            c->deleteLater();
            it = m_clients.erase(it);
        } else {
            ++it;
        }
    }
    for (const McpServerConfig& s : m_servers) {
        if (m_clients.contains(s.name)) continue;
        auto* c = new McpClient(s, this);
        m_clients.insert(s.name, c);
        connect(c, &McpClient::ready, this, [this] { Q_EMIT toolsChanged(); });
        connect(c, &McpClient::toolsChanged, this, [this] { Q_EMIT toolsChanged(); });
        connect(c, &McpClient::failed, this, [this, c](const QString& why) {
            Q_EMIT serverFailed(c->config().name, why);
            Q_EMIT toolsChanged();
        });
        auto finish = [this, c](quint64 clientTicket, auto&& deliver) {
            for (auto it = m_calls.begin(); it != m_calls.end(); ++it)
                if (it->first == c && it->second == clientTicket) {
                    const quint64 ticket = it.key();
                    m_calls.erase(it);
                    deliver(ticket);
                    return;
                }
        };
        connect(c, &McpClient::toolResult, this, [this, finish](quint64 t, const McpToolResult& r) {
            finish(t, [&](quint64 ticket) { Q_EMIT callFinished(ticket, r); });
        });
        connect(c, &McpClient::toolFailed, this, [this, finish](quint64 t, const QString& why) {
            finish(t, [&](quint64 ticket) { Q_EMIT callFailed(ticket, why); });
        });
    }
}

void McpHost::startAll() {
    for (const McpServerConfig& s : m_servers)
        if (McpClient* c = m_clients.value(s.name); c && !s.disabled) c->start();
}

void McpHost::stopAll() {
    for (McpClient* c : std::as_const(m_clients)) c->stop();
}

QList<McpHostTool> McpHost::tools() const {
    QList<McpHostTool> out;
    for (const McpServerConfig& s : m_servers) {
        const McpClient* c = m_clients.value(s.name);
        if (!c || c->state() != McpClient::State::Ready) continue;
        for (const McpTool& t : c->tools())
            out << McpHostTool{s.name, t, mcpModelToolName(s.name, t.name), toolSettings(s.name, t.name)};
    }
    return out;
}

QJsonArray McpHost::chatTools() const {
    QJsonArray out;
    for (const McpHostTool& t : tools()) {
        if (!t.settings.enabled || t.settings.approval == McpApproval::Never) continue;
        QJsonObject parameters = t.tool.inputSchema;
        if (parameters.isEmpty()) parameters.insert(QStringLiteral("type"), QStringLiteral("object"));
        QString description = t.tool.description;
        if (description.isEmpty()) description = t.tool.title;
        const QJsonObject function{{QStringLiteral("name"), t.modelName},
                                   {QStringLiteral("description"), description},
                                   {QStringLiteral("parameters"), parameters}};
        out.append(QJsonObject{{QStringLiteral("type"), QStringLiteral("function")}, {QStringLiteral("function"), function}});
    }
    return out;
}

std::optional<McpHostTool> McpHost::toolFor(const QString& modelName) const {
    for (const McpHostTool& t : tools())
        if (t.modelName == modelName) return t;
    return std::nullopt;
}

McpToolSettings McpHost::toolSettings(const QString& server, const QString& tool) const {
    return m_toolSettings.value(settingsKey(server, tool));
}

bool McpHost::setToolSettings(const QString& server, const QString& tool, const McpToolSettings& settings,
                              QString* error) {
    m_toolSettings.insert(settingsKey(server, tool), settings);
    if (!saveToolSettings(error)) return false;
    Q_EMIT toolsChanged();
    return true;
}

void McpHost::failSoon(quint64 ticket, const QString& why) {
    QTimer::singleShot(0, this, [this, ticket, why] { Q_EMIT callFailed(ticket, why); });
}

quint64 McpHost::call(const QString& modelName, const QJsonObject& arguments, bool userApproved) {
    const quint64 ticket = m_nextTicket++;
    for (const McpHostTool& t : tools()) {
        if (t.modelName != modelName) continue;
        if (!t.settings.enabled) {
            failSoon(ticket, QStringLiteral("the tool %1 of %2 is turned off").arg(t.tool.name, t.server));
        } else if (t.settings.approval == McpApproval::Never) {
            failSoon(ticket, QStringLiteral("the user does not allow the tool %1 of %2").arg(t.tool.name, t.server));
        } else if (t.settings.approval == McpApproval::Ask && !userApproved) {
            failSoon(ticket, QStringLiteral("the user did not approve this call of %1").arg(t.tool.name));
        } else {
            McpClient* c = m_clients.value(t.server);
            m_calls.insert(ticket, {c, c->callTool(t.tool.name, arguments)});
        }
        return ticket;
    }
    failSoon(ticket, QStringLiteral("no running MCP server has a tool named %1").arg(modelName));
    return ticket;
}

} // namespace hearth::app
