// Conversation export to Markdown and JSON and import from that JSON, checked field by field.
#include "services/chat_export.h"

#include "services/chat_documents.h"
#include "services/chat_images.h"
#include "services/chat_tools.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <QSaveFile>

#include <algorithm>
#include <cmath>

namespace hearth::app {

namespace {

QString roleHeading(const QString& role) {
    if (role == QStringLiteral("user")) return QStringLiteral("You");
    if (role == QStringLiteral("assistant")) return QStringLiteral("Assistant");
    if (role == QStringLiteral("tool")) return QStringLiteral("Tool");
    return QStringLiteral("System");
}

Status bad(const QString& what) { return invalidFormat(("chat import: " + what).toStdString()); }

// Reads an optional field of `o` with the JSON type `type`; a present field of another type fails.
bool typed(const QJsonObject& o, const char* key, QJsonValue::Type type, QJsonValue& out, QString& error,
           const QString& where) {
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isUndefined() || v.isNull()) return true;
    if (v.type() != type) {
        error = QStringLiteral("%1 \"%2\" has the wrong type").arg(where, QLatin1String(key));
        return false;
    }
    out = v;
    return true;
}

// A message's "images": [{"mime_type", "data": base64}]; "" or what is wrong with them.
QString readImages(const QJsonArray& list, QList<QByteArray>& out, const QString& where) {
    if (list.size() > kMaxImagesPerMessage)
        return QStringLiteral("%1 more than %2 images").arg(where).arg(kMaxImagesPerMessage);
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QString name = QStringLiteral("image %1").arg(i + 1);
        const QJsonValue data = list[i].toObject().value(QStringLiteral("data"));
        if (!list[i].isObject() || !data.isString())
            return QStringLiteral("%1 %2 has no \"data\" text").arg(where, name);
        const auto decoded = QByteArray::fromBase64Encoding(data.toString().toLatin1(),
                                                            QByteArray::AbortOnBase64DecodingErrors);
        if (!decoded) return QStringLiteral("%1 %2 is not base64").arg(where, name);
        if (const QString why = imageProblem(*decoded, name); !why.isEmpty())
            return QStringLiteral("%1 %2").arg(where, why);
        out << *decoded;
    }
    return {};
}

} // namespace

QString markdownFence(const QString& text) {
    int longest = 0, run = 0;
    for (QChar c : text) longest = std::max(longest, run = c == QLatin1Char('`') ? run + 1 : 0);
    return QString(std::max(3, longest + 1), QLatin1Char('`'));
}

QString chatToMarkdown(const ExportedChat& chat) {
    QString md = QStringLiteral("# %1\n\n").arg(chat.conversation.title.isEmpty() ? QStringLiteral("Chat")
                                                                                 : chat.conversation.title);
    if (!chat.conversation.model.isEmpty())
        md += QStringLiteral("*Model: %1*\n\n").arg(chat.conversation.model);
    if (!chat.conversation.systemPrompt.isEmpty())
        md += QStringLiteral("## System\n\n%1\n\n").arg(chat.conversation.systemPrompt);
    for (const StoredMessage& m : chat.messages) {
        md += QStringLiteral("## %1\n\n").arg(roleHeading(m.role));
        // Images inline as data URIs: the file stays one file that shows them where it is read.
        for (qsizetype i = 0; i < m.images.size(); ++i)
            md += QStringLiteral("![image %1](%2)\n\n").arg(i + 1).arg(imageDataUri(m.images[i]));
        if (!m.reasoning.isEmpty()) {
            for (const QString& line : m.reasoning.trimmed().split(QLatin1Char('\n')))
                md += line.trimmed().isEmpty() ? QStringLiteral(">\n") : QStringLiteral("> ") + line + QLatin1Char('\n');
            md += QLatin1Char('\n');
        }
        // Attached files in full, each in a fence longer than any backtick run it holds.
        for (const ChatDocument& d : m.documents) {
            const QString fence = markdownFence(d.text);
            const QString label = d.part > 0 ? QStringLiteral("*Found in %1 (part %2):*").arg(d.name).arg(d.part)
                                             : QStringLiteral("*Attached file: %1*").arg(d.name);
            md += QStringLiteral("%1\n\n%2\n%3\n%2\n\n").arg(label, fence, d.text.trimmed());
        }
        md += m.content;
        if (!m.content.endsWith(QLatin1Char('\n'))) md += QLatin1Char('\n');
        for (const ChatToolCall& c : m.toolCalls)
            md += QStringLiteral("\n*Tool call* `%1` `%2`\n").arg(c.name, c.arguments);
        if (m.state == QStringLiteral("incomplete")) md += QStringLiteral("\n*(incomplete)*\n");
        else if (m.state == QStringLiteral("stopped")) md += QStringLiteral("\n*(stopped)*\n");
        else if (m.state == QStringLiteral("failed")) md += QStringLiteral("\n*(failed: %1)*\n").arg(m.error);
        md += QLatin1Char('\n');
    }
    return md;
}

QByteArray chatToJson(const ExportedChat& chat) {
    QJsonObject root;
    root.insert(QStringLiteral("format"), QLatin1String(kChatExportFormat));
    root.insert(QStringLiteral("version"), kChatExportVersion);
    root.insert(QStringLiteral("title"), chat.conversation.title);
    root.insert(QStringLiteral("model"), chat.conversation.model);
    root.insert(QStringLiteral("system_prompt"), chat.conversation.systemPrompt);
    const QJsonDocument sampling = QJsonDocument::fromJson(chat.conversation.samplingJson.toUtf8());
    root.insert(QStringLiteral("sampling"), sampling.isObject() ? sampling.object() : QJsonObject());
    root.insert(QStringLiteral("created"), double(chat.conversation.created));
    root.insert(QStringLiteral("updated"), double(chat.conversation.updated));
    QJsonArray messages;
    for (const StoredMessage& m : chat.messages) {
        QJsonObject o;
        o.insert(QStringLiteral("role"), m.role);
        o.insert(QStringLiteral("content"), m.content);
        if (!m.images.isEmpty()) {
            QJsonArray images;
            for (const QByteArray& image : m.images)
                images.append(QJsonObject{{QStringLiteral("mime_type"), imageMimeType(image)},
                                          {QStringLiteral("data"), QString::fromLatin1(image.toBase64())}});
            o.insert(QStringLiteral("images"), images);
        }
        if (!m.reasoning.isEmpty()) {
            o.insert(QStringLiteral("reasoning"), m.reasoning);
            o.insert(QStringLiteral("reasoning_ms"), m.reasoningMs);
        }
        if (!m.toolCalls.isEmpty()) o.insert(QStringLiteral("tool_calls"), toolCallsArray(m.toolCalls));
        if (!m.toolCallId.isEmpty()) o.insert(QStringLiteral("tool_call_id"), m.toolCallId);
        if (!m.documents.isEmpty()) o.insert(QStringLiteral("documents"), documentsArray(m.documents));
        if (m.role == QStringLiteral("assistant")) {
            o.insert(QStringLiteral("tokens"), m.tokens);
            o.insert(QStringLiteral("ttft_ms"), m.ttftMs);
            o.insert(QStringLiteral("tokens_per_second"), m.tokensPerSecond);
            o.insert(QStringLiteral("context_tokens"), m.contextTokens);
            o.insert(QStringLiteral("state"), m.state);
            if (!m.error.isEmpty()) o.insert(QStringLiteral("error"), m.error);
        }
        o.insert(QStringLiteral("created"), double(m.created));
        messages.append(o);
    }
    root.insert(QStringLiteral("messages"), messages);
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

Result<ExportedChat> chatFromJson(const QByteArray& json) {
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return bad(QStringLiteral("not JSON (%1 at byte %2)").arg(parseError.errorString()).arg(parseError.offset));
    if (!doc.isObject()) return bad(QStringLiteral("the file is not a JSON object"));
    const QJsonObject root = doc.object();
    if (root.value(QStringLiteral("format")).toString() != QLatin1String(kChatExportFormat))
        return bad(QStringLiteral("not a Hearth chat export (\"format\" is not \"%1\")")
                       .arg(QLatin1String(kChatExportFormat)));
    const QJsonValue version = root.value(QStringLiteral("version"));
    if (!version.isDouble() || version.toDouble() != double(kChatExportVersion))
        return bad(QStringLiteral("unsupported version (this Hearth reads version %1)").arg(kChatExportVersion));

    ExportedChat chat;
    QString error;
    QJsonValue v;
    const QString top = QStringLiteral("field");
    for (const char* key : {"title", "model", "system_prompt"}) {
        v = QJsonValue();
        if (!typed(root, key, QJsonValue::String, v, error, top)) return bad(error);
        const QString s = v.toString();
        if (qstrcmp(key, "title") == 0) chat.conversation.title = s;
        else if (qstrcmp(key, "model") == 0) chat.conversation.model = s;
        else chat.conversation.systemPrompt = s;
    }
    v = QJsonValue();
    if (!typed(root, "sampling", QJsonValue::Object, v, error, top)) return bad(error);
    chat.conversation.samplingJson =
        QString::fromUtf8(QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact));
    for (const char* key : {"created", "updated"}) {
        v = QJsonValue();
        if (!typed(root, key, QJsonValue::Double, v, error, top)) return bad(error);
        const double d = v.toDouble();
        const qint64 ms = std::isfinite(d) && d > 0 && d < 1e15 ? qint64(d) : 0;
        (qstrcmp(key, "created") == 0 ? chat.conversation.created : chat.conversation.updated) = ms;
    }

    const QJsonValue list = root.value(QStringLiteral("messages"));
    if (!list.isArray()) return bad(QStringLiteral("\"messages\" is missing or not a list"));
    const QJsonArray array = list.toArray();
    if (array.size() > kMaxImportMessages)
        return bad(QStringLiteral("too many messages (%1; at most %2)").arg(array.size()).arg(kMaxImportMessages));
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString where = QStringLiteral("message %1:").arg(i + 1);
        if (!array[i].isObject()) return bad(QStringLiteral("%1 not an object").arg(where));
        const QJsonObject o = array[i].toObject();
        StoredMessage m;
        const QJsonValue role = o.value(QStringLiteral("role"));
        if (!role.isString()) return bad(QStringLiteral("%1 \"role\" is missing or not text").arg(where));
        m.role = role.toString();
        if (m.role != QStringLiteral("user") && m.role != QStringLiteral("assistant") &&
            m.role != QStringLiteral("system") && m.role != QStringLiteral("tool"))
            return bad(QStringLiteral("%1 unknown role \"%2\"").arg(where, m.role.left(40)));
        const QJsonValue content = o.value(QStringLiteral("content"));
        if (!content.isString()) return bad(QStringLiteral("%1 \"content\" is missing or not text").arg(where));
        m.content = content.toString();
        v = QJsonValue();
        if (!typed(o, "images", QJsonValue::Array, v, error, where)) return bad(error);
        if (const QString why = readImages(v.toArray(), m.images, where); !why.isEmpty()) return bad(why);
        v = QJsonValue();
        if (!typed(o, "tool_calls", QJsonValue::Array, v, error, where)) return bad(error);
        for (const QJsonValue& call : v.toArray()) {
            const ChatToolCall t = toolCallFrom(call.toObject());
            if (t.id.isEmpty() || t.name.isEmpty())
                return bad(QStringLiteral("%1 a tool call needs an \"id\" and a \"name\"").arg(where));
            m.toolCalls << t;
        }
        v = QJsonValue();
        if (!typed(o, "documents", QJsonValue::Array, v, error, where)) return bad(error);
        for (const QJsonValue& doc : v.toArray()) {
            const QJsonObject d = doc.toObject();
            if (!d.value(QStringLiteral("name")).isString() || !d.value(QStringLiteral("text")).isString())
                return bad(QStringLiteral("%1 an attached file needs a \"name\" and a \"text\"").arg(where));
            m.documents << documentFrom(d);
        }
        v = QJsonValue();
        if (!typed(o, "tool_call_id", QJsonValue::String, v, error, where)) return bad(error);
        m.toolCallId = v.toString();
        v = QJsonValue();
        if (!typed(o, "reasoning", QJsonValue::String, v, error, where)) return bad(error);
        m.reasoning = v.toString();
        v = QJsonValue();
        if (!typed(o, "state", QJsonValue::String, v, error, where)) return bad(error);
        if (v.isString()) {
            m.state = v.toString();
            if (m.state != QStringLiteral("complete") && m.state != QStringLiteral("incomplete") &&
                m.state != QStringLiteral("stopped") && m.state != QStringLiteral("failed"))
                return bad(QStringLiteral("%1 unknown state \"%2\"").arg(where, m.state.left(40)));
        }
        v = QJsonValue();
        if (!typed(o, "error", QJsonValue::String, v, error, where)) return bad(error);
        m.error = v.toString();
        // Numbers: a wrong type fails; out-of-range values read as 0.
        auto number = [&](const char* key, double& out) {
            QJsonValue n;
            if (!typed(o, key, QJsonValue::Double, n, error, where)) return false;
            const double d = n.toDouble();
            out = std::isfinite(d) && d >= 0 && d < 1e15 ? d : 0.0;
            return true;
        };
        double tokens = 0, context = 0, created = 0;
        if (!number("reasoning_ms", m.reasoningMs) || !number("tokens", tokens) || !number("ttft_ms", m.ttftMs) ||
            !number("tokens_per_second", m.tokensPerSecond) || !number("context_tokens", context) ||
            !number("created", created))
            return bad(error);
        m.tokens = tokens < 2e9 ? int(tokens) : 0;
        m.contextTokens = context < 2e9 ? int(context) : 0;
        m.created = qint64(created);
        chat.messages << m;
    }
    return chat;
}

QString exportPathFor(const QString& path, const QString& format) {
    const QString suffix = format.compare(QStringLiteral("json"), Qt::CaseInsensitive) == 0 ? QStringLiteral(".json")
                                                                                             : QStringLiteral(".md");
    if (path.isEmpty() || path.endsWith(suffix, Qt::CaseInsensitive)) return path;
    if (suffix == QStringLiteral(".md") && path.endsWith(QStringLiteral(".markdown"), Qt::CaseInsensitive)) return path;
    return path + suffix;
}

Result<QString> writeChatExport(const ExportedChat& chat, const QString& path, const QString& format) {
    const QString target = exportPathFor(path, format);
    const QByteArray data = format.compare(QStringLiteral("json"), Qt::CaseInsensitive) == 0
                                ? chatToJson(chat)
                                : chatToMarkdown(chat).toUtf8();
    QSaveFile file(target);
    if (!file.open(QIODevice::WriteOnly) || file.write(data) != data.size() || !file.commit())
        return ioError(QStringLiteral("cannot write %1: %2").arg(target, file.errorString()).toStdString());
    return target;
}

} // namespace hearth::app
