// The reference MCP servers from npm (scripts/install-npm-clients.sh puts them in one folder) as
// the app's tests start them: node and the package's script, or why they cannot run here.
#pragma once

#include "services/mcp_config.h"

#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QString>

namespace hearth::test {

// The npm folder scripts/install-npm-clients.sh fills.
inline QString mcpNpmDir() {
    const QString dir = qEnvironmentVariable("HEARTH_NPM_DIR");
    return dir.isEmpty() ? QDir::homePath() + QStringLiteral("/.cache/hearth-npm") : dir;
}

// A stdio server run by node from the npm folder, or "" (with `why`) when it is not installed.
inline QString mcpServerScript(const QString& package, QString& why) {
    if (QStandardPaths::findExecutable(QStringLiteral("node")).isEmpty()) {
        why = QStringLiteral("node is not installed");
        return {};
    }
    const QString script = mcpNpmDir() + QStringLiteral("/node_modules/@modelcontextprotocol/") + package +
                           QStringLiteral("/dist/index.js");
    if (!QFile::exists(script)) {
        why = QStringLiteral("%1 is not installed (scripts/install-npm-clients.sh)").arg(package);
        return {};
    }
    return script;
}

// The reference "everything" server over stdio, run by node from `script` (mcpServerScript).
inline app::McpServerConfig everythingServer(const QString& script, const QString& name = QStringLiteral("everything")) {
    app::McpServerConfig c;
    c.name = name;
    c.command = QStandardPaths::findExecutable(QStringLiteral("node"));
    c.args = {script, QStringLiteral("stdio")};
    return c;
}

} // namespace hearth::test
