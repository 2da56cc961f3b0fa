// MCP servers as the user configures them: the `mcpServers` JSON that Claude Desktop, LM Studio
// and Cursor read (a command with arguments and environment for stdio, or a URL for streamable
// HTTP), parsed into checked entries with a reason for each one that cannot be used.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <QUrl>

namespace hearth::app {

struct McpServerConfig {
    QString name;                 // the key under mcpServers
    // stdio: the program, its arguments and extra environment (merged over the app's)
    QString command;
    QStringList args;
    QHash<QString, QString> env;
    QString cwd;                  // "" : the app's working directory
    // streamable HTTP: the endpoint and extra request headers (Authorization, ...)
    QUrl url;
    QHash<QString, QString> headers;
    bool disabled = false;        // "disabled": true keeps the entry without starting it

    bool isStdio() const { return !command.isEmpty(); }
    bool operator==(const McpServerConfig&) const = default;
};

struct McpConfigParse {
    QList<McpServerConfig> servers; // the usable entries, by name
    QStringList errors;             // "name: why" for each entry left out, or why the whole text was
};

// Reads {"mcpServers": {"name": {"command": "npx", "args": [...], "env": {...}}, "other":
// {"url": "http://127.0.0.1:3001/mcp"}}} (a bare object of servers is taken too). An entry with
// neither a command nor an http(s) URL, or with fields of the wrong type, is left out with the
// reason; text that is not such JSON gives no servers and one error.
McpConfigParse parseMcpServers(const QByteArray& json);

// The JSON for `servers` in the same layout (what the app saves and what it exports).
QJsonObject mcpServersObject(const QList<McpServerConfig>& servers);
QByteArray mcpServersJson(const QList<McpServerConfig>& servers);

} // namespace hearth::app
