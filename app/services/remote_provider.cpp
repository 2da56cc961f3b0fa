// Remote providers: the saved list and keys (ProviderStore) and the HTTP client (RemoteClient) that
// lists models and streams chat completions as server-sent events.
#include "services/remote_provider.h"

#include "services/chat_documents.h"
#include "services/chat_images.h"
#include "services/chat_reply.h"
#include "services/json_file.h"
#include "services/secret_file.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>

#include <limits>

namespace hearth::app {

namespace {

constexpr int kSecretToolMs = 2000;

QStringList keyringAttributes(const QString& name) {
    return {QStringLiteral("application"), QStringLiteral("hearth"), QStringLiteral("provider"), name};
}

// base + "/" + tail, whatever trailing slashes the base has.
QUrl endpoint(const QUrl& base, const QString& tail) {
    QUrl u = base;
    QString path = u.path();
    while (path.endsWith(QLatin1Char('/'))) path.chop(1);
    u.setPath(path + QLatin1Char('/') + tail);
    return u;
}

// What an error answer says: OpenAI's {"error": {"message"}}, {"error": "..."}, {"detail": ...}
// or the start of the body.
QString errorText(const QByteArray& body) {
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    const QJsonValue error = o.value(QStringLiteral("error"));
    if (error.isObject()) {
        const QString m = error.toObject().value(QStringLiteral("message")).toString();
        if (!m.isEmpty()) return m;
    }
    if (error.isString()) return error.toString();
    const QJsonValue detail = o.value(QStringLiteral("detail"));
    if (detail.isString()) return detail.toString();
    const QString text = QString::fromUtf8(body.left(200)).trimmed();
    return text.isEmpty() ? QStringLiteral("no details") : text;
}

QString replyFailure(const RemoteProvider& p, QNetworkReply* reply, const QByteArray& body) {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 0 && (status < 200 || status >= 300))
        return QStringLiteral("%1 answered HTTP %2: %3").arg(p.name).arg(status).arg(errorText(body));
    if (reply->error() == QNetworkReply::OperationCanceledError ||
        reply->error() == QNetworkReply::TimeoutError)
        return QStringLiteral("%1 (%2) did not answer in time").arg(p.name, p.baseUrl.toString());
    return QStringLiteral("cannot reach %1 (%2): %3")
        .arg(p.name, p.baseUrl.toString(), reply->errorString());
}

} // namespace

QString validateProvider(const RemoteProvider& p) {
    static const QRegularExpression kName(QStringLiteral("^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$"));
    if (!kName.match(p.name).hasMatch())
        return QStringLiteral("a provider's name is 1 to 64 letters, digits, '.', '_' or '-' "
                              "(not starting with '.'): '%1'").arg(p.name.left(80));
    const QString scheme = p.baseUrl.scheme().toLower();
    if (!p.baseUrl.isValid() || (scheme != QLatin1String("http") && scheme != QLatin1String("https")) ||
        p.baseUrl.host().isEmpty())
        return QStringLiteral("the provider's URL must be http(s)://host[:port]/path, e.g. "
                              "http://gpu-box:8000/v1 (got '%1')").arg(p.baseUrl.toString().left(200));
    if (p.baseUrl.hasQuery() || p.baseUrl.hasFragment() || !p.baseUrl.userInfo().isEmpty())
        return QStringLiteral("the provider's URL must have no query, fragment or user part");
    return {};
}

// ---------------------------------------------------------------------------------------------
// ProviderStore

ProviderStore::ProviderStore(QString dataDir) : m_dataDir(std::move(dataDir)) {
    if (!qEnvironmentVariableIsSet("HEARTH_NO_KEYRING"))
        m_secretTool = QStandardPaths::findExecutable(QStringLiteral("secret-tool"));
    QJsonObject root;
    if (!readJsonObjectFile(listPath(), QStringLiteral("a list of providers"), &root, &m_lastError)) return;
    const QJsonArray list = root.value(QStringLiteral("providers")).toArray();
    for (const QJsonValue& v : list) {
        const QJsonObject o = v.toObject();
        RemoteProvider p;
        p.name = o.value(QStringLiteral("name")).toString();
        p.baseUrl = QUrl(o.value(QStringLiteral("baseUrl")).toString());
        p.extendedSampling = o.value(QStringLiteral("extendedSampling")).toBool(true);
        if (validateProvider(p).isEmpty() && !find(p.name)) m_providers.push_back(p);
    }
}

QString ProviderStore::listPath() const { return QDir(m_dataDir).filePath(QStringLiteral("providers.json")); }

QString ProviderStore::keyFilePath(const QString& name) const {
    return QDir(m_dataDir).filePath(QStringLiteral("provider-%1.key").arg(name));
}

std::optional<RemoteProvider> ProviderStore::find(const QString& name) const {
    for (const RemoteProvider& p : m_providers)
        if (p.name == name) return p;
    return std::nullopt;
}

bool ProviderStore::setProvider(const RemoteProvider& provider) {
    if (const QString why = validateProvider(provider); !why.isEmpty()) {
        m_lastError = why;
        return false;
    }
    bool replaced = false;
    for (RemoteProvider& p : m_providers)
        if (p.name == provider.name) {
            p = provider;
            replaced = true;
        }
    if (!replaced) m_providers.push_back(provider);
    return save();
}

bool ProviderStore::removeProvider(const QString& name) {
    const auto before = m_providers.size();
    m_providers.removeIf([&](const RemoteProvider& p) { return p.name == name; });
    if (m_providers.size() == before) {
        m_lastError = QStringLiteral("no provider named '%1'").arg(name);
        return false;
    }
    return save() && setApiKey(name, QString());
}

bool ProviderStore::save() {
    if (!QDir().mkpath(m_dataDir)) {
        m_lastError = QStringLiteral("cannot create %1").arg(m_dataDir);
        return false;
    }
    QJsonArray list;
    for (const RemoteProvider& p : m_providers)
        list.append(QJsonObject{{QStringLiteral("name"), p.name},
                                {QStringLiteral("baseUrl"), p.baseUrl.toString()},
                                {QStringLiteral("extendedSampling"), p.extendedSampling}});
    return writeJsonObjectFile(listPath(), QJsonObject{{QStringLiteral("providers"), list}}, &m_lastError);
}

QString ProviderStore::apiKey(const QString& name) const {
    if (auto it = m_keys.constFind(name); it != m_keys.cend()) return *it;
    QString key;
    if (auto fromKeyring = keyringLookup(name)) {
        key = *fromKeyring;
    } else {
        key = readSecretFile(keyFilePath(name));
    }
    m_keys.insert(name, key);
    return key;
}

bool ProviderStore::setApiKey(const QString& name, const QString& key) {
    if (const QString why = validateProvider({name, QUrl(QStringLiteral("http://x/")), true}); !why.isEmpty()) {
        m_lastError = why;
        return false;
    }
    const QString trimmed = key.trimmed();
    const QString path = keyFilePath(name);
    if (trimmed.isEmpty()) {
        keyringClear(name);
        if (QFile::exists(path) && !QFile::remove(path)) {
            m_lastError = QStringLiteral("cannot delete %1").arg(path);
            return false;
        }
        m_keys.insert(name, QString());
        return true;
    }
    if (keyringStore(name, trimmed)) {
        if (QFile::exists(path)) QFile::remove(path); // an older copy outside the keyring
        m_keys.insert(name, trimmed);
        return true;
    }
    if (!writeKeyFile(name, trimmed)) return false;
    m_keys.insert(name, trimmed);
    return true;
}

bool ProviderStore::writeKeyFile(const QString& name, const QString& key) {
    return writeSecretFile(keyFilePath(name), key, &m_lastError);
}

std::optional<QString> ProviderStore::keyringLookup(const QString& name) const {
    if (m_secretTool.isEmpty()) return std::nullopt;
    QProcess p;
    p.start(m_secretTool, QStringList{QStringLiteral("lookup")} + keyringAttributes(name));
    if (!p.waitForFinished(kSecretToolMs)) {
        p.kill();
        p.waitForFinished(500);
        return std::nullopt;
    }
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) return std::nullopt;
    const QString key = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
    if (key.isEmpty()) return std::nullopt;
    return key;
}

bool ProviderStore::keyringStore(const QString& name, const QString& key) const {
    if (m_secretTool.isEmpty()) return false;
    QProcess p;
    p.start(m_secretTool, QStringList{QStringLiteral("store"), QStringLiteral("--label=Hearth provider ") + name} +
                              keyringAttributes(name));
    if (!p.waitForStarted(kSecretToolMs)) return false;
    p.write(key.toUtf8());
    p.closeWriteChannel();
    if (!p.waitForFinished(kSecretToolMs)) {
        p.kill();
        p.waitForFinished(500);
        return false;
    }
    return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

void ProviderStore::keyringClear(const QString& name) const {
    if (m_secretTool.isEmpty()) return;
    QProcess p;
    p.start(m_secretTool, QStringList{QStringLiteral("clear")} + keyringAttributes(name));
    if (!p.waitForFinished(kSecretToolMs)) {
        p.kill();
        p.waitForFinished(500);
    }
}

// ---------------------------------------------------------------------------------------------
// RemoteClient

struct RemoteClient::Chat {
    RemoteProvider provider;
    QPointer<QNetworkReply> reply;
    QByteArray buffer;     // SSE text not yet split into events
    QByteArray errorBody;  // an error answer's body
    QElapsedTimer clock;   // since the request was sent
    qint64 firstTokenMs = -1;
    QString finishReason;
    GenerationUsage usage;
    bool usageFromServer = false;
    int pieces = 0;        // content deltas seen (completion tokens when the server sends no usage)
    bool stopped = false;  // stop() was called: nothing more is delivered
    QList<ChatToolCall> toolCalls; // streamed tool_calls, by their index
};

RemoteClient::RemoteClient(const ProviderStore* keys, QObject* parent)
    : QObject(parent), m_keys(keys), m_net(new QNetworkAccessManager(this)) {}

RemoteClient::~RemoteClient() {
    for (QNetworkReply* r : m_net->findChildren<QNetworkReply*>()) {
        r->disconnect(this);
        r->abort();
    }
    qDeleteAll(m_chats);
}

QString RemoteClient::keyFor(const RemoteProvider& provider) const {
    return m_keys ? m_keys->apiKey(provider.name) : QString();
}

void RemoteClient::failSoon(quint64 id, const QString& message, bool list) {
    QMetaObject::invokeMethod(
        this,
        [this, id, message, list] {
            if (list) Q_EMIT listFailed(id, message);
            else Q_EMIT failed(id, message);
        },
        Qt::QueuedConnection);
}

quint64 RemoteClient::listModels(const RemoteProvider& provider) {
    const quint64 ticket = m_nextId++;
    if (const QString why = validateProvider(provider); !why.isEmpty()) {
        failSoon(ticket, why, true);
        return ticket;
    }
    QNetworkRequest req(endpoint(provider.baseUrl, QStringLiteral("models")));
    req.setRawHeader("Accept", "application/json");
    if (const QString key = keyFor(provider); !key.isEmpty())
        req.setRawHeader("Authorization", "Bearer " + key.toUtf8());
    req.setTransferTimeout(m_listTimeoutMs);
    QNetworkReply* reply = m_net->get(req);
    connect(reply, &QNetworkReply::finished, this, [this, reply, ticket, provider] {
        reply->deleteLater();
        const QByteArray body = reply->readAll();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (reply->error() != QNetworkReply::NoError || status != 200) {
            Q_EMIT listFailed(ticket, replyFailure(provider, reply, body));
            return;
        }
        const QJsonValue data = QJsonDocument::fromJson(body).object().value(QStringLiteral("data"));
        if (!data.isArray()) {
            Q_EMIT listFailed(ticket, QStringLiteral("%1 sent no model list (expected {\"data\": [...]} "
                                                     "from %2)").arg(provider.name, reply->url().toString()));
            return;
        }
        QStringList ids;
        for (const QJsonValue& m : data.toArray()) {
            const QString id = m.toObject().value(QStringLiteral("id")).toString();
            if (!id.isEmpty()) ids.push_back(id);
        }
        Q_EMIT modelsListed(ticket, ids);
    });
    return ticket;
}

quint64 RemoteClient::sendChat(const RemoteProvider& provider, const QString& model,
                               const QList<ChatMessage>& messages, const Sampling& s, const QJsonArray& tools) {
    const quint64 id = m_nextId++;
    if (const QString why = validateProvider(provider); !why.isEmpty()) {
        failSoon(id, why, false);
        return id;
    }
    if (model.isEmpty()) {
        failSoon(id, QStringLiteral("no model chosen for %1").arg(provider.name), false);
        return id;
    }
    QJsonArray list;
    for (const ChatMessage& m : messages) {
        if (!m.toolCalls.isEmpty() || !m.toolCallId.isEmpty()) {
            // OpenAI's form: an assistant turn's calls with their ids, a result naming its call.
            QJsonObject o{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), m.content}};
            QJsonArray calls;
            for (const ChatToolCall& c : m.toolCalls)
                calls.append(QJsonObject{{QStringLiteral("id"), c.id},
                                         {QStringLiteral("type"), QStringLiteral("function")},
                                         {QStringLiteral("function"), QJsonObject{{QStringLiteral("name"), c.name},
                                                                                  {QStringLiteral("arguments"), c.arguments}}}});
            if (!calls.isEmpty()) o.insert(QStringLiteral("tool_calls"), calls);
            if (!m.toolCallId.isEmpty()) o.insert(QStringLiteral("tool_call_id"), m.toolCallId);
            list.append(o);
            continue;
        }
        const QString text = messageTextForModel(m.content, m.documents);
        if (m.images.isEmpty()) {
            list.append(QJsonObject{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), text}});
            continue;
        }
        // OpenAI's content parts: the images as data URIs, before the text (as the app sends
        // them to a local model).
        QJsonArray parts;
        for (const QByteArray& image : m.images)
            parts.append(QJsonObject{{QStringLiteral("type"), QStringLiteral("image_url")},
                                     {QStringLiteral("image_url"),
                                      QJsonObject{{QStringLiteral("url"), imageDataUri(image)}}}});
        if (!text.isEmpty())
            parts.append(QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                                     {QStringLiteral("text"), text}});
        list.append(QJsonObject{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), parts}});
    }
    QJsonObject body{{QStringLiteral("model"), model},
                     {QStringLiteral("messages"), list},
                     {QStringLiteral("stream"), true},
                     {QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}}}};
    if (!tools.isEmpty()) body.insert(QStringLiteral("tools"), tools);
    const bool greedy = s.temperature <= 0.0f;
    body.insert(QStringLiteral("temperature"), greedy ? 0.0 : double(s.temperature));
    if (s.maxTokens > 0) body.insert(QStringLiteral("max_tokens"), s.maxTokens);
    if (!greedy && s.topP > 0.0f && s.topP < 1.0f) body.insert(QStringLiteral("top_p"), double(s.topP));
    if (!s.stopStrings.isEmpty()) body.insert(QStringLiteral("stop"), QJsonArray::fromStringList(s.stopStrings));
    if (s.seed != 0)
        body.insert(QStringLiteral("seed"), qint64(s.seed & quint64(std::numeric_limits<qint64>::max())));
    if (provider.extendedSampling) {
        if (!greedy && s.topK > 0) body.insert(QStringLiteral("top_k"), s.topK);
        if (!greedy && s.minP > 0.0f) body.insert(QStringLiteral("min_p"), double(s.minP));
        if (s.repetitionPenalty != 1.0f)
            body.insert(QStringLiteral("repetition_penalty"), double(s.repetitionPenalty));
        if (s.ignoreEos) body.insert(QStringLiteral("ignore_eos"), true);
    }

    QNetworkRequest req(endpoint(provider.baseUrl, QStringLiteral("chat/completions")));
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    req.setRawHeader("Accept", "text/event-stream");
    if (const QString key = keyFor(provider); !key.isEmpty())
        req.setRawHeader("Authorization", "Bearer " + key.toUtf8());
    req.setTransferTimeout(m_chatTimeoutMs);
    auto* chat = new Chat;
    chat->provider = provider;
    chat->clock.start();
    chat->reply = m_net->post(req, QJsonDocument(body).toJson(QJsonDocument::Compact));
    m_chats.insert(id, chat);
    connect(chat->reply, &QNetworkReply::readyRead, this, [this, id] { onChatData(id); });
    connect(chat->reply, &QNetworkReply::finished, this, [this, id] { onChatDone(id); });
    return id;
}

void RemoteClient::onChatData(quint64 id) {
    Chat* chat = m_chats.value(id);
    if (!chat || !chat->reply || chat->stopped) return;
    const int status = chat->reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200) {
        chat->errorBody += chat->reply->readAll();
        return;
    }
    chat->buffer += chat->reply->readAll();
    chat->buffer.replace("\r\n", "\n");
    for (;;) {
        chat = m_chats.value(id); // a slot may have stopped the request
        if (!chat || chat->stopped) return;
        const qsizetype end = chat->buffer.indexOf("\n\n");
        if (end < 0) return;
        const QByteArray event = chat->buffer.left(end);
        chat->buffer.remove(0, end + 2);
        QByteArray data;
        for (const QByteArray& line : event.split('\n')) {
            if (!line.startsWith("data:")) continue; // comments (keep-alives), event names
            QByteArray value = line.mid(5);
            if (value.startsWith(' ')) value.remove(0, 1);
            if (!data.isEmpty()) data += '\n';
            data += value;
        }
        if (!data.isEmpty() && !handleEvent(id, *chat, data)) return;
    }
}

bool RemoteClient::handleEvent(quint64 id, Chat& chat, const QByteArray& data) {
    if (data.trimmed() == "[DONE]") {
        endChat(id, nullptr);
        return false;
    }
    const QJsonObject o = QJsonDocument::fromJson(data).object();
    if (o.contains(QStringLiteral("error"))) {
        const QString message = QStringLiteral("%1: %2").arg(chat.provider.name, errorText(data));
        endChat(id, &message);
        return false;
    }
    if (const QJsonValue u = o.value(QStringLiteral("usage")); u.isObject()) {
        const QJsonObject usage = u.toObject();
        chat.usage.promptTokens = usage.value(QStringLiteral("prompt_tokens")).toInt();
        chat.usage.completionTokens = usage.value(QStringLiteral("completion_tokens")).toInt();
        chat.usage.cachedPromptTokens = usage.value(QStringLiteral("prompt_tokens_details"))
                                            .toObject().value(QStringLiteral("cached_tokens")).toInt();
        chat.usageFromServer = true;
    }
    const QJsonArray choices = o.value(QStringLiteral("choices")).toArray();
    if (choices.isEmpty()) return true;
    const QJsonObject choice = choices.first().toObject();
    const QString reason = choice.value(QStringLiteral("finish_reason")).toString();
    if (!reason.isEmpty()) chat.finishReason = reason;
    const QJsonObject delta = choice.value(QStringLiteral("delta")).toObject();
    QString reasoning = delta.value(QStringLiteral("reasoning_content")).toString();
    if (reasoning.isEmpty()) reasoning = delta.value(QStringLiteral("reasoning")).toString();
    const QString content = delta.value(QStringLiteral("content")).toString();
    // Tool calls stream as pieces by index: the first names the call, the rest add arguments.
    for (const QJsonValue& v : delta.value(QStringLiteral("tool_calls")).toArray()) {
        const QJsonObject piece = v.toObject();
        const int index = piece.value(QStringLiteral("index")).toInt(int(chat.toolCalls.size()));
        if (index < 0 || index >= 128) continue;
        while (chat.toolCalls.size() <= index) chat.toolCalls.append(ChatToolCall{});
        ChatToolCall& call = chat.toolCalls[index];
        const QJsonObject fn = piece.value(QStringLiteral("function")).toObject();
        if (const QString id = piece.value(QStringLiteral("id")).toString(); !id.isEmpty()) call.id = id;
        call.name += fn.value(QStringLiteral("name")).toString();
        call.arguments += fn.value(QStringLiteral("arguments")).toString();
        if (chat.firstTokenMs < 0) chat.firstTokenMs = chat.clock.elapsed();
    }
    if ((!reasoning.isEmpty() || !content.isEmpty()) && chat.firstTokenMs < 0)
        chat.firstTokenMs = chat.clock.elapsed();
    if (!reasoning.isEmpty()) {
        ++chat.pieces;
        Q_EMIT reasoningReceived(id, reasoning);
        if (m_chats.value(id) != &chat || chat.stopped) return false;
    }
    if (!content.isEmpty()) {
        ++chat.pieces;
        Q_EMIT tokenReceived(id, content);
        if (m_chats.value(id) != &chat || chat.stopped) return false;
    }
    return true;
}

void RemoteClient::onChatDone(quint64 id) {
    Chat* chat = m_chats.value(id);
    if (!chat || !chat->reply || chat->stopped) return;
    QNetworkReply* reply = chat->reply;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply->error() == QNetworkReply::NoError && status == 200) {
        onChatData(id); // whatever is left
        chat = m_chats.value(id);
        if (!chat) return;
        if (!chat->finishReason.isEmpty()) {
            endChat(id, nullptr);
            return;
        }
        const QString message = QStringLiteral("%1: the stream ended before the reply did").arg(chat->provider.name);
        endChat(id, &message);
        return;
    }
    chat->errorBody += reply->readAll();
    const QString message = replyFailure(chat->provider, reply, chat->errorBody);
    endChat(id, &message);
}

void RemoteClient::endChat(quint64 id, const QString* failure) {
    Chat* chat = m_chats.take(id);
    if (!chat) return;
    if (QNetworkReply* r = chat->reply) {
        r->disconnect(this);
        if (r->isRunning()) r->abort();
        r->deleteLater();
    }
    GenerationUsage usage = chat->usage;
    if (!chat->usageFromServer) usage.completionTokens = chat->pieces;
    if (chat->firstTokenMs >= 0) {
        usage.timeToFirstTokenMs = double(chat->firstTokenMs);
        usage.generationMs = double(chat->clock.elapsed() - chat->firstTokenMs);
    }
    const QString reason = chat->finishReason.isEmpty() ? QStringLiteral("stop") : chat->finishReason;
    // The calls reach the chat as the text a local model writes for them (Hermes <tool_call>
    // blocks), which it reads back with readToolCalls like any other reply.
    QString calls;
    if (!failure && !chat->stopped)
        for (const ChatToolCall& c : chat->toolCalls)
            if (!c.name.isEmpty()) calls += QString::fromStdString(toolCallText(c.name.toStdString(), c.arguments.toStdString()));
    delete chat;
    if (!calls.isEmpty()) Q_EMIT tokenReceived(id, calls);
    if (failure) Q_EMIT failed(id, *failure);
    else Q_EMIT finished(id, reason, usage);
}

void RemoteClient::stop(quint64 id) {
    Chat* chat = m_chats.value(id);
    if (!chat || chat->stopped) return;
    chat->stopped = true;
    chat->finishReason = QStringLiteral("cancelled");
    if (QNetworkReply* r = chat->reply) {
        r->disconnect(this);
        r->abort(); // closes the connection: the remote cancels the generation
    }
    // The caller hears of it after it returns, as from EngineHost.
    QMetaObject::invokeMethod(this, [this, id] { endChat(id, nullptr); }, Qt::QueuedConnection);
}

void RemoteClient::stopAll() {
    for (quint64 id : m_chats.keys()) stop(id);
}

} // namespace hearth::app
