// Tool calls in the desktop chat: reading them from a reply, storing them, and running them with
// the user's approval (see chat_tools.h).
#include "services/chat_tools.h"

#include "hearth/tool_calls.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <QTimer>

#include <string>
#include <vector>

namespace hearth::app {

namespace {

QStringList offeredNames(const QJsonArray& offered) {
    QStringList names;
    for (const QJsonValue& v : offered) {
        const QString name = v.toObject().value(QStringLiteral("function")).toObject().value(QStringLiteral("name")).toString();
        if (!name.isEmpty()) names << name;
    }
    return names;
}

// Where the markup of a call starts in `text` (-1: none), counting a marker cut at the end.
qsizetype callMarkupStart(const QString& text) {
    static const QString markers[] = {QStringLiteral("<tool_call>"), QStringLiteral("[TOOL_CALLS]")};
    qsizetype start = -1;
    for (const QString& m : markers) {
        const qsizetype at = text.indexOf(m);
        if (at >= 0 && (start < 0 || at < start)) start = at;
    }
    if (start >= 0) return start;
    // The end of the text may be the first characters of a marker still being written.
    for (const QString& m : markers)
        for (qsizetype n = std::min(m.size() - 1, text.size()); n > 0; --n)
            if (text.endsWith(QStringView(m).left(n))) return text.size() - n;
    return -1;
}

} // namespace

ReplyToolCalls readToolCalls(const QString& answer, const QJsonArray& offered) {
    ReplyToolCalls out;
    out.content = answer;
    const QStringList names = offeredNames(offered);
    if (names.isEmpty()) return out;
    std::vector<std::string> known;
    for (const QString& n : names) known.push_back(n.toStdString());
    const ToolCallParse parse = parseToolCalls(answer.toStdString(), known);
    if (parse.calls.empty()) return out;
    out.content = QString::fromStdString(parse.content);
    for (const ToolCall& c : parse.calls)
        out.calls << ChatToolCall{QString::fromStdString(c.id), QString::fromStdString(c.name),
                                  QString::fromStdString(c.arguments)};
    return out;
}

QString visibleReplyText(const QString& streamed) {
    const qsizetype start = callMarkupStart(streamed);
    return start < 0 ? streamed : streamed.left(start).trimmed();
}

QJsonArray toolCallsArray(const QList<ChatToolCall>& calls) {
    QJsonArray array;
    for (const ChatToolCall& c : calls)
        array.append(QJsonObject{{QStringLiteral("id"), c.id},
                                 {QStringLiteral("name"), c.name},
                                 {QStringLiteral("arguments"), c.arguments}});
    return array;
}

ChatToolCall toolCallFrom(const QJsonObject& o) {
    return ChatToolCall{o.value(QStringLiteral("id")).toString(), o.value(QStringLiteral("name")).toString(),
                        o.value(QStringLiteral("arguments")).toString()};
}

QString toolCallsJson(const QList<ChatToolCall>& calls) {
    if (calls.isEmpty()) return QStringLiteral("");
    return QString::fromUtf8(QJsonDocument(toolCallsArray(calls)).toJson(QJsonDocument::Compact));
}

QList<ChatToolCall> toolCallsFromJson(const QString& json) {
    QList<ChatToolCall> out;
    if (json.isEmpty()) return out;
    const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8());
    for (const QJsonValue& v : doc.array()) {
        const ChatToolCall c = toolCallFrom(v.toObject());
        if (!c.id.isEmpty() && !c.name.isEmpty()) out << c;
    }
    return out;
}

ChatToolRunner::ChatToolRunner(McpHost* host, QObject* parent) : QObject(parent), m_host(host) {
    qRegisterMetaType<ChatToolCall>();
    if (!m_host) return;
    connect(m_host, &McpHost::callFinished, this, &ChatToolRunner::onHostFinished);
    connect(m_host, &McpHost::callFailed, this, &ChatToolRunner::onHostFailed);
}

QJsonArray ChatToolRunner::offeredTools() const { return m_host ? m_host->chatTools() : QJsonArray{}; }

void ChatToolRunner::begin(const QList<ChatToolCall>& calls, bool askAll) {
    cancel();
    if (calls.isEmpty()) return;
    ++m_rounds;
    for (const ChatToolCall& c : calls) {
        if (m_calls.contains(c.id)) continue;
        m_calls.insert(c.id, Pending{c});
        m_order << c.id;
    }
    // Decided in order once every call is listed, so the round cannot end half begun.
    QStringList unknown, always;
    for (const QString& id : std::as_const(m_order)) {
        const std::optional<McpHostTool> tool = m_host ? m_host->toolFor(m_calls[id].call.name) : std::nullopt;
        if (!tool || !tool->settings.enabled || tool->settings.approval == McpApproval::Never) {
            if (!askAll) unknown << id; // else the user decides, and the host says why it cannot run
        }
        else if (tool->settings.approval == McpApproval::Always && !askAll) always << id;
    }
    Q_EMIT changed();
    // Outcomes come after begin returns, as the host's do.
    QTimer::singleShot(0, this, [this, unknown, always, round = m_rounds] {
        if (round != m_rounds) return;
        for (const QString& id : unknown) {
            if (phase(id) != Phase::Waiting) continue;
            const QString name = m_calls[id].call.name;
            finish(id, QStringLiteral("Error: no tool named %1 is available in this chat.").arg(name), true);
        }
        for (const QString& id : always)
            if (phase(id) == Phase::Waiting) run(id, false);
    });
}

void ChatToolRunner::allowOnce(const QString& callId) {
    if (phase(callId) == Phase::Waiting) run(callId, true);
}

void ChatToolRunner::allowAlways(const QString& callId) {
    if (phase(callId) != Phase::Waiting) return;
    if (m_host)
        if (const std::optional<McpHostTool> tool = m_host->toolFor(m_calls[callId].call.name)) {
            McpToolSettings settings = tool->settings;
            settings.approval = McpApproval::Always;
            m_host->setToolSettings(tool->server, tool->tool.name, settings);
        }
    run(callId, true);
}

void ChatToolRunner::deny(const QString& callId) {
    if (phase(callId) != Phase::Waiting) return;
    finish(callId, QStringLiteral("The user denied this call of %1; it did not run.").arg(m_calls[callId].call.name),
           true);
}

void ChatToolRunner::cancel() {
    m_calls.clear();
    m_order.clear();
}

ChatToolRunner::Phase ChatToolRunner::phase(const QString& callId) const {
    const auto it = m_calls.constFind(callId);
    return it == m_calls.constEnd() ? Phase::None : it->phase;
}

QStringList ChatToolRunner::waitingCalls() const {
    QStringList out;
    for (const QString& id : m_order)
        if (phase(id) == Phase::Waiting) out << id;
    return out;
}

void ChatToolRunner::run(const QString& callId, bool approved) {
    Pending& p = m_calls[callId];
    QJsonParseError error{};
    const QJsonDocument args = QJsonDocument::fromJson(p.call.arguments.toUtf8(), &error);
    if (!p.call.arguments.trimmed().isEmpty() && (error.error != QJsonParseError::NoError || !args.isObject())) {
        finish(callId, QStringLiteral("Error: the arguments of this call are not a JSON object (%1).")
                           .arg(error.error != QJsonParseError::NoError ? error.errorString() : QStringLiteral("not an object")),
               true);
        return;
    }
    if (!m_host) {
        finish(callId, QStringLiteral("Error: no MCP servers are set up."), true);
        return;
    }
    p.phase = Phase::Running;
    p.ticket = m_host->call(p.call.name, args.object(), approved);
    Q_EMIT changed();
}

void ChatToolRunner::stopAll() {
    const QStringList open = m_order;
    for (const QString& id : open)
        if (phase(id) == Phase::Waiting || phase(id) == Phase::Running)
            finish(id, QStringLiteral("The user stopped this call of %1 before it returned.").arg(m_calls[id].call.name),
                   true, true);
}

void ChatToolRunner::finish(const QString& callId, const QString& result, bool isError, bool stopping) {
    auto it = m_calls.find(callId);
    if (it == m_calls.end() || it->phase == Phase::Done) return;
    it->phase = Phase::Done;
    it->ticket = 0;
    const ChatToolCall call = it->call;
    Q_EMIT callFinished(call, result, isError);
    if (!m_calls.contains(callId)) return; // the round was dropped meanwhile
    Q_EMIT changed();
    for (const QString& id : std::as_const(m_order))
        if (phase(id) != Phase::Done) return;
    cancel();
    Q_EMIT roundFinished(stopping);
}

void ChatToolRunner::onHostFinished(quint64 ticket, const McpToolResult& result) {
    for (auto it = m_calls.cbegin(); it != m_calls.cend(); ++it)
        if (it->ticket == ticket && it->phase == Phase::Running) {
            const QString text = result.text.isEmpty() ? QStringLiteral("(the tool returned nothing)") : result.text;
            finish(it.key(), text, result.isError);
            return;
        }
}

void ChatToolRunner::onHostFailed(quint64 ticket, const QString& why) {
    for (auto it = m_calls.cbegin(); it != m_calls.cend(); ++it)
        if (it->ticket == ticket && it->phase == Phase::Running) {
            finish(it.key(), QStringLiteral("Error: %1").arg(why), true);
            return;
        }
}

} // namespace hearth::app
