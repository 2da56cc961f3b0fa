// The app's MCP servers together: the list kept in <dataDir>/mcp.json (Claude Desktop's
// mcpServers layout, so the file can be copied in, or imported), a client per server started on
// demand and stopped with the host, each tool's switch and approval kept in
// <dataDir>/mcp-tools.json, and tool calls routed by the names the model sees. A call runs only
// when its tool is on and approved: "always" runs it, "ask" needs the user's yes for this call,
// "never" refuses it before anything reaches the server.
#pragma once

#include "services/mcp_client.h"
#include "services/mcp_config.h"

#include <QHash>
#include <QJsonArray>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <optional>

namespace hearth::app {

enum class McpApproval { Ask, Always, Never };

struct McpToolSettings {
    bool enabled = true;
    McpApproval approval = McpApproval::Ask;
    bool operator==(const McpToolSettings&) const = default;
};

// A tool of a running server as the chat offers it to the model.
struct McpHostTool {
    QString server;
    McpTool tool;
    QString modelName; // "server__tool", letters, digits, '_' and '-' only (OpenAI's function names)
    McpToolSettings settings;
};

class McpHost : public QObject {
    Q_OBJECT
public:
    // Reads <dataDir>/mcp.json and mcp-tools.json; starts nothing.
    explicit McpHost(QString dataDir, QObject* parent = nullptr);
    ~McpHost() override; // stops every server

    QList<McpServerConfig> servers() const { return m_servers; }
    // Entries of mcp.json left out, and why (a damaged file: one line, and the file is kept).
    QStringList configErrors() const { return m_configErrors; }
    // Replaces the list and saves it (a damaged mcp.json is first kept as mcp.json.damaged).
    // Servers removed or changed are stopped.
    bool setServers(const QList<McpServerConfig>& servers, QString* error = nullptr);
    // Adds the usable servers of an mcpServers JSON (a Claude Desktop or LM Studio file), replacing
    // those of the same name, and saves; the returned parse says what was left out.
    McpConfigParse importServers(const QByteArray& json, QString* error = nullptr);
    // The same from a file (claude_desktop_config.json, LM Studio's mcp.json), at most 4 MiB.
    McpConfigParse importFile(const QString& path, QString* error = nullptr);

    // Starts every server not turned off (a running one is left as it is); each ends in the
    // client's ready or failed, reported here as toolsChanged / serverFailed.
    void startAll();
    void stopAll();
    McpClient* client(const QString& server) const { return m_clients.value(server); }

    // The tools of the servers that are ready, enabled or not, in server then tool order.
    QList<McpHostTool> tools() const;
    // The tools a chat offers the model: those of ready servers that are on and not "never", as
    // OpenAI's function list ({"type": "function", "function": {name, description, parameters}}),
    // named as call() takes them.
    QJsonArray chatTools() const;
    // The tool of a ready server the model knows as `modelName` (nullopt: none).
    std::optional<McpHostTool> toolFor(const QString& modelName) const;
    McpToolSettings toolSettings(const QString& server, const QString& tool) const;
    bool setToolSettings(const QString& server, const QString& tool, const McpToolSettings& settings,
                         QString* error = nullptr);

    // Calls the tool the model named; callFinished or callFailed follows with the ticket (never
    // before this returns). `userApproved` is the user's yes to this one call, which "ask" needs.
    quint64 call(const QString& modelName, const QJsonObject& arguments, bool userApproved);

Q_SIGNALS:
    void toolsChanged();
    void serverFailed(const QString& server, const QString& why);
    void callFinished(quint64 ticket, const hearth::app::McpToolResult& result);
    void callFailed(quint64 ticket, const QString& why);

private:
    void load();
    bool saveServers(QString* error);
    bool saveToolSettings(QString* error);
    void rebuildClients();
    void failSoon(quint64 ticket, const QString& why);

    QString m_dataDir;
    QList<McpServerConfig> m_servers;
    QStringList m_configErrors;
    bool m_configDamaged = false;
    QHash<QString, McpClient*> m_clients; // by server name; children of this host
    QHash<QString, McpToolSettings> m_toolSettings; // by "server/tool"
    QHash<quint64, QPair<McpClient*, quint64>> m_calls; // host ticket -> client and its ticket
    quint64 m_nextTicket = 1;
};

// The name a model sees for `tool` of `server` (at most 64 characters).
QString mcpModelToolName(const QString& server, const QString& tool);

} // namespace hearth::app
