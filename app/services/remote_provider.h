// Remote engines for the app: OpenAI-compatible providers (vLLM, TGI, llama-server, another
// hearth-server), the list kept in <dataDir>/providers.json with each API key in the system keyring
// (secret-tool) or an owner-only file, and a client that lists a provider's models and streams
// chats with the same signals as EngineHost.
#pragma once

#include "services/service_types.h"

#include <QHash>
#include <QJsonArray>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <optional>

class QNetworkAccessManager;
class QNetworkReply;

namespace hearth::app {

struct RemoteProvider {
    QString name;   // unique; letters, digits, '.', '_' and '-' (it names the key file)
    QUrl baseUrl;   // as OpenAI clients take it, e.g. http://gpu-box:8000/v1
    // Also send top_k, min_p, repetition_penalty and ignore_eos (vLLM, llama-server, TGI and
    // hearth take them; api.openai.com refuses them).
    bool extendedSampling = true;

    bool operator==(const RemoteProvider&) const = default;
};

// "" when `provider` can be saved and used, else why not.
QString validateProvider(const RemoteProvider& provider);

// The providers the user added, and their API keys. Not thread-safe; keyring calls wait for
// secret-tool (at most about two seconds each), and keys are cached after the first read.
class ProviderStore {
public:
    enum class KeyBackend { Keyring, File };

    // Reads <dataDir>/providers.json (missing: no providers). The keyring is used when
    // secret-tool is on PATH and HEARTH_NO_KEYRING is not set.
    explicit ProviderStore(QString dataDir);

    QList<RemoteProvider> providers() const { return m_providers; }
    std::optional<RemoteProvider> find(const QString& name) const;
    // Adds the provider, or replaces the one of the same name; saves the list.
    bool setProvider(const RemoteProvider& provider);
    // Removes the provider and forgets its key.
    bool removeProvider(const QString& name);

    // The provider's key ("" when none is stored).
    QString apiKey(const QString& name) const;
    // Stores the key (an empty one forgets it): in the keyring when it takes it, else in
    // <dataDir>/provider-<name>.key readable by the owner only.
    bool setApiKey(const QString& name, const QString& key);

    KeyBackend keyBackend() const { return m_secretTool.isEmpty() ? KeyBackend::File : KeyBackend::Keyring; }
    // The secret-tool program to use ("" : owner-only files only); tests force either path.
    void setSecretTool(const QString& program) { m_secretTool = program; m_keys.clear(); }
    QString keyFilePath(const QString& name) const;
    QString listPath() const;
    QString lastError() const { return m_lastError; }

private:
    bool save();
    std::optional<QString> keyringLookup(const QString& name) const;
    bool keyringStore(const QString& name, const QString& key) const;
    void keyringClear(const QString& name) const;
    bool writeKeyFile(const QString& name, const QString& key);

    QString m_dataDir;
    QString m_secretTool;
    QList<RemoteProvider> m_providers;
    mutable QHash<QString, QString> m_keys; // read or written this session
    QString m_lastError;
};

// Talks to providers over HTTP on the thread it lives on. Request ids start at 2^48 so they never
// meet EngineHost's; every id ends with exactly one finished() or failed().
class RemoteClient : public QObject {
    Q_OBJECT
public:
    // `keys` (may be null: no keys sent) supplies each provider's API key; it must outlive this.
    explicit RemoteClient(const ProviderStore* keys = nullptr, QObject* parent = nullptr);
    ~RemoteClient() override;

    // GET <baseUrl>/models; ends with modelsListed(ticket, ids) or listFailed(ticket, message).
    quint64 listModels(const RemoteProvider& provider);
    // POST <baseUrl>/chat/completions streamed. Reasoning deltas (reasoning_content) come as
    // reasoningReceived, the answer as tokenReceived. Sampling::seed 0 sends no seed. `tools`
    // (OpenAI's function list) go as "tools"; the calls the reply makes come at its end as
    // <tool_call> blocks in the answer's text (what readToolCalls reads), messages' calls and
    // results go in OpenAI's tool_calls / tool_call_id form.
    quint64 sendChat(const RemoteProvider& provider, const QString& model,
                     const QList<ChatMessage>& messages, const Sampling& sampling, const QJsonArray& tools = {});
    // Ends the request: the connection is closed (the remote stops) and it finishes "cancelled".
    void stop(quint64 id);
    void stopAll();
    QList<quint64> activeRequests() const { return m_chats.keys(); }

    // Inactivity limits (ms) for model lists and chats (default 15 s and 300 s).
    void setTimeouts(int listMs, int chatMs) { m_listTimeoutMs = listMs; m_chatTimeoutMs = chatMs; }

Q_SIGNALS:
    void modelsListed(quint64 ticket, const QStringList& models);
    void listFailed(quint64 ticket, const QString& message);
    void tokenReceived(quint64 id, const QString& text);
    void reasoningReceived(quint64 id, const QString& text);
    // reason: "stop", "length", "cancelled", or what the remote said ("tool_calls", ...).
    void finished(quint64 id, const QString& reason, const hearth::app::GenerationUsage& usage);
    void failed(quint64 id, const QString& message);

private:
    struct Chat;
    QString keyFor(const RemoteProvider& provider) const;
    void failSoon(quint64 id, const QString& message, bool list);
    void onChatData(quint64 id);
    void onChatDone(quint64 id);
    // One SSE event's data; false when the request ended with it.
    bool handleEvent(quint64 id, Chat& chat, const QByteArray& data);
    void endChat(quint64 id, const QString* failure);

    const ProviderStore* m_keys = nullptr;
    QNetworkAccessManager* m_net = nullptr;
    QHash<quint64, Chat*> m_chats;
    quint64 m_nextId = quint64(1) << 48;
    int m_listTimeoutMs = 15000;
    int m_chatTimeoutMs = 300000;
};

} // namespace hearth::app
