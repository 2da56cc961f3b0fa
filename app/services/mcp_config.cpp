// Parsing and writing the mcpServers JSON (see mcp_config.h).
#include "services/mcp_config.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>

namespace hearth::app {

namespace {

// A JSON object of string values into `out`; false (with `why`) when a value is not a string.
bool stringMap(const QJsonValue& value, const char* field, QHash<QString, QString>& out, QString& why) {
    if (value.isUndefined() || value.isNull()) return true;
    if (!value.isObject()) {
        why = QStringLiteral("'%1' must be an object of strings").arg(QLatin1String(field));
        return false;
    }
    const QJsonObject o = value.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (!it.value().isString()) {
            why = QStringLiteral("'%1.%2' must be a string").arg(QLatin1String(field), it.key());
            return false;
        }
        out.insert(it.key(), it.value().toString());
    }
    return true;
}

// One entry; "" when it is usable, else why not.
QString readEntry(const QString& name, const QJsonValue& value, McpServerConfig& out) {
    if (name.trimmed().isEmpty()) return QStringLiteral("a server needs a name");
    if (!value.isObject()) return QStringLiteral("the entry must be an object");
    const QJsonObject o = value.toObject();
    out.name = name;
    const QString type = o.value(QStringLiteral("type")).toString();
    if (type == QStringLiteral("sse"))
        return QStringLiteral("the old SSE transport is not supported; give the server's streamable HTTP URL");
    const QJsonValue command = o.value(QStringLiteral("command"));
    const QJsonValue url = o.value(QStringLiteral("url")).isUndefined() ? o.value(QStringLiteral("serverUrl"))
                                                                       : o.value(QStringLiteral("url"));
    if (!command.isUndefined() && !command.isString()) return QStringLiteral("'command' must be a string");
    if (!url.isUndefined() && !url.isString()) return QStringLiteral("'url' must be a string");
    out.command = command.toString().trimmed();
    if (!out.command.isEmpty() && !url.isUndefined()) return QStringLiteral("give either 'command' or 'url', not both");
    QString why;
    if (!out.command.isEmpty()) {
        const QJsonValue args = o.value(QStringLiteral("args"));
        if (!args.isUndefined() && !args.isNull()) {
            if (!args.isArray()) return QStringLiteral("'args' must be a list of strings");
            for (const QJsonValue& a : args.toArray()) {
                if (!a.isString()) return QStringLiteral("'args' must be a list of strings");
                out.args << a.toString();
            }
        }
        if (!stringMap(o.value(QStringLiteral("env")), "env", out.env, why)) return why;
        const QJsonValue cwd = o.value(QStringLiteral("cwd"));
        if (!cwd.isUndefined() && !cwd.isString()) return QStringLiteral("'cwd' must be a string");
        out.cwd = cwd.toString();
    } else if (!url.isUndefined()) {
        out.url = QUrl(url.toString().trimmed(), QUrl::StrictMode);
        const QString scheme = out.url.scheme();
        if (!out.url.isValid() || out.url.host().isEmpty() ||
            (scheme != QStringLiteral("http") && scheme != QStringLiteral("https")))
            return QStringLiteral("'url' must be an http or https URL");
        if (!stringMap(o.value(QStringLiteral("headers")), "headers", out.headers, why)) return why;
    } else {
        return QStringLiteral("the entry needs a 'command' (stdio) or a 'url' (streamable HTTP)");
    }
    const QJsonValue disabled = o.value(QStringLiteral("disabled"));
    if (!disabled.isUndefined() && !disabled.isBool()) return QStringLiteral("'disabled' must be true or false");
    out.disabled = disabled.toBool(false);
    return {};
}

} // namespace

McpConfigParse parseMcpServers(const QByteArray& json) {
    McpConfigParse out;
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (error.error != QJsonParseError::NoError) {
        out.errors << QStringLiteral("not JSON: %1 at offset %2").arg(error.errorString()).arg(error.offset);
        return out;
    }
    if (!doc.isObject()) {
        out.errors << QStringLiteral("expected an object with 'mcpServers'");
        return out;
    }
    QJsonObject servers = doc.object();
    if (servers.contains(QStringLiteral("mcpServers"))) {
        const QJsonValue v = servers.value(QStringLiteral("mcpServers"));
        if (!v.isObject()) {
            out.errors << QStringLiteral("'mcpServers' must be an object of servers by name");
            return out;
        }
        servers = v.toObject();
    }
    // In name order (QJsonObject keeps keys sorted).
    const QStringList order = servers.keys();
    for (const QString& name : order) {
        McpServerConfig config;
        const QString why = readEntry(name, servers.value(name), config);
        if (why.isEmpty()) out.servers << config;
        else out.errors << QStringLiteral("%1: %2").arg(name, why);
    }
    return out;
}

QJsonObject mcpServersObject(const QList<McpServerConfig>& servers) {
    QJsonObject all;
    for (const McpServerConfig& s : servers) {
        QJsonObject o;
        auto map = [](const QHash<QString, QString>& h) {
            QJsonObject m;
            for (auto it = h.begin(); it != h.end(); ++it) m.insert(it.key(), it.value());
            return m;
        };
        if (s.isStdio()) {
            o.insert(QStringLiteral("command"), s.command);
            if (!s.args.isEmpty()) o.insert(QStringLiteral("args"), QJsonArray::fromStringList(s.args));
            if (!s.env.isEmpty()) o.insert(QStringLiteral("env"), map(s.env));
            if (!s.cwd.isEmpty()) o.insert(QStringLiteral("cwd"), s.cwd);
        } else {
            o.insert(QStringLiteral("url"), s.url.toString());
            if (!s.headers.isEmpty()) o.insert(QStringLiteral("headers"), map(s.headers));
        }
        if (s.disabled) o.insert(QStringLiteral("disabled"), true);
        all.insert(s.name, o);
    }
    QJsonObject root;
    root.insert(QStringLiteral("mcpServers"), all);
    return root;
}

QByteArray mcpServersJson(const QList<McpServerConfig>& servers) {
    return QJsonDocument(mcpServersObject(servers)).toJson(QJsonDocument::Indented);
}

} // namespace hearth::app
