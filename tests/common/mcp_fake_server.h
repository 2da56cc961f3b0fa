// A stand-in MCP server for the app's tests, as a POSIX shell script: it answers initialize and
// tools/list (two tools, "note" titled "Take a note", and "rm"), then appends every request it
// gets to a log file and answers each call with "done <id>", so a test can tell which calls
// reached it.
#pragma once

#include "services/mcp_config.h"

#include <QFile>
#include <QString>

namespace hearth::test {

inline QString loggingMcpServerScript(const QString& log) {
    return QStringLiteral(
               "read l; echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
               "\"serverInfo\":{\"name\":\"fake\"}}}'; read l; read l; "
               "echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"note\",\"title\":\"Take a note\","
               "\"description\":\"Writes a note\",\"inputSchema\":{\"type\":\"object\"}},"
               "{\"name\":\"rm\",\"description\":\"Deletes a file\",\"inputSchema\":{\"type\":\"object\"}}]}}'; "
               "while read l; do printf '%s\\n' \"$l\" >> '%1'; "
               "id=$(printf '%s' \"$l\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p'); "
               "[ -n \"$id\" ] && echo \"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":$id,\\\"result\\\":{\\\"content\\\":"
               "[{\\\"type\\\":\\\"text\\\",\\\"text\\\":\\\"done $id\\\"}]}}\"; done\n")
        .arg(log);
}

// The stand-in server as a stdio command named "fake".
inline app::McpServerConfig loggingMcpServer(const QString& log) {
    app::McpServerConfig c;
    c.name = QStringLiteral("fake");
    c.command = QStringLiteral("/bin/sh");
    c.args = {QStringLiteral("-c"), loggingMcpServerScript(log)};
    return c;
}

// How many tools/call requests reached the stand-in server.
inline int mcpCallsLogged(const QString& log) {
    QFile f(log);
    if (!f.open(QIODevice::ReadOnly)) return 0;
    return int(f.readAll().count("\"tools/call\""));
}

} // namespace hearth::test
