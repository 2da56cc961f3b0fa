// EngineHost owns the inference engine for the app: it loads models and submits generations on a
// worker thread and delivers their tokens (a chat reply's reasoning apart from its answer),
// results and statistics as signals on its own thread.
#pragma once

#include "services/service_types.h"

#include <QHash>
#include <QJsonArray>
#include <QList>
#include <QObject>
#include <QSet>
#include <QString>

#include <algorithm>

#include <memory>

class QThread;

namespace hearth {
class Engine;
}
class QTimer;

namespace hearth::app {

class RemoteClient;
struct RemoteProvider;

namespace detail {
class EngineWorker;
class RelaySink;
struct HostRelay;
} // namespace detail

class EngineHost : public QObject {
    Q_OBJECT
public:
    enum class State { Empty, Loading, Ready };
    Q_ENUM(State)

    explicit EngineHost(QObject* parent = nullptr);
    ~EngineHost() override;

    // Starts loading `path` on the worker thread; ends with loaded() or loadFailed(). A model that
    // is loaded stays usable until the new one replaces it. A later call supersedes this one.
    void loadModel(const QString& path, const LoadSettings& settings);
    // Ends every request (finished with "cancelled") and frees the model on the worker thread.
    void unloadModel();

    // Chats go to `model` of a remote OpenAI-compatible provider through `client` (which must
    // outlive this host or the remote use) instead of a local engine: the local model is freed,
    // the state becomes Ready at once and loaded() reports model().path "remote:<provider>/<model>".
    // Plain text and token prompts are refused while remote. unloadModel() or a load ends it.
    void useRemote(const RemoteProvider& provider, const QString& model, RemoteClient* client);
    bool isRemote() const { return !m_remoteModel.isEmpty(); }

    State state() const { return m_state; }
    bool isLoaded() const { return m_state == State::Ready; }
    const LoadedModel& model() const { return m_model; }
    // The loaded engine itself, for the embedded API server to serve the same model (null when
    // none is loaded). Holders keep it alive past an unload; the server drops it when stopped.
    std::shared_ptr<Engine> sharedEngine() const { return isLoaded() ? m_shared : nullptr; }

    // Each send returns a request id at once; the request's outcome comes as signals carrying it,
    // including errors found before it reaches the engine (no model, prompt too long, ...).
    // Plain-text completion: the text is tokenized as the CLI does (BOS where the vocabulary
    // adds one, special-token text parsed), no chat template.
    quint64 sendText(const QString& prompt, const Sampling& sampling);
    quint64 sendTokens(const QList<int>& promptIds, const Sampling& sampling);
    // A chat rendered with the model's template, with the assistant's turn opened. Its reply's
    // reasoning (<think> blocks, harmony's analysis channel; the reader is chosen from the
    // rendered prompt) comes as reasoningReceived, the answer as tokenReceived. An assistant
    // message's reasoning goes to the template as reasoning_content, never inside its content.
    // `tools` (OpenAI's function list) are given to the template, with the messages' tool calls
    // and results (chatRequestFor); a remote provider is not sent them yet.
    quint64 sendChat(const QList<ChatMessage>& messages, const Sampling& sampling, const QJsonArray& tools = {});

    // Stop ends the request: the engine's own end (with its usage) when it comes within the stop
    // grace, else finished(id, "cancelled") without usage at the grace's end, while the engine
    // drops the request once its step in flight is over (a long prompt step on a slow device).
    void stop(quint64 id);
    void stopAll();
    void setStopGraceMs(int ms) { m_stopGraceMs = std::max(0, ms); }
    // Requests sent and not yet finished or failed.
    QList<quint64> activeRequests() const { return m_live.values(); }
    // The context request `id` fills while its reply streams: its prompt's tokens and the reply's
    // so far, counted per token (contextUsedChanged); 0 before its first token and once it ended.
    int contextUsed(quint64 id) const;

    // Unloads the model after it has served nothing for this long (ms; 0: never), unless held.
    // Idle means: loaded, no request of this host running, and no hold (the embedded API server
    // holds the engine while it runs, since its requests do not pass through this host).
    void setIdleUnloadMs(int ms);
    int idleUnloadMs() const { return m_idleUnloadMs; }
    void setHeld(bool held);

    // How often statsUpdated() fires while a model is loaded (ms; 0 turns it off).
    void setStatsInterval(int ms);
    int statsInterval() const { return m_statsIntervalMs; }

Q_SIGNALS:
    void stateChanged(hearth::app::EngineHost::State state);
    void loaded(const hearth::app::LoadedModel& model);
    void loadFailed(const QString& message);
    // The stage a load is in ("Reading the model file", "Preparing the weights on vulkan:0", ...)
    // and how far along the whole load is (0..1).
    void loadProgress(const QString& stage, double fraction);
    void unloaded();
    // The idle timer unloaded the model at `path` (unloaded() comes first).
    void idleUnloaded(const QString& path);
    // The answer text, piece by piece (a plain completion: all of its text).
    void tokenReceived(quint64 id, const QString& text);
    // A chat reply's reasoning, piece by piece (a <think> reply's all comes before its answer).
    void reasoningReceived(quint64 id, const QString& text);
    // reason: "stop", "length", "cancelled" (or "error" when the engine says so).
    void finished(quint64 id, const QString& reason, const hearth::app::GenerationUsage& usage);
    void failed(quint64 id, const QString& message);
    void statsUpdated(const hearth::app::EngineStatsSnapshot& stats);
    // Request `id`'s context use grew with a token (see contextUsed); before that token's text.
    void contextUsedChanged(quint64 id, int tokens);
    // Request `id`'s prompt is being read over several steps: `done` of `total` tokens so far
    // (a prompt read in one step, or taken from the prefix cache, says nothing).
    void promptProgress(quint64 id, int done, int total);

public:
    // Context full (the chat page): like sendChat, but while the rendered prompt plus room for
    // the reply (min(maxTokens, a quarter of the context, at least 16)) does not fit the
    // context, the oldest turns are left out on the worker thread: after a leading system
    // message (always kept), a user message and the replies up to the next user message, never
    // the last message. chatTrimmed(id, n) comes before any token with the number of messages
    // left out (0: none). If even the last turn alone does not fit, it fails as sendChat does.
    quint64 sendChatFitting(const QList<ChatMessage>& messages, const Sampling& sampling, const QJsonArray& tools = {});

Q_SIGNALS:
    void chatTrimmed(quint64 id, int droppedMessages);

private:
    friend struct detail::HostRelay;
    friend class detail::EngineWorker;
    friend class detail::RelaySink;

    struct Prompt;
    quint64 send(Prompt prompt, const Sampling& sampling);
    void setState(State s);
    void failSoon(quint64 id, const QString& message);
    void pollStats();
    void armIdleTimer();
    void idleTimeout();

    // Called on this object's thread with events posted by the worker or the token sinks.
    void handleLoaded(quint64 generation, const LoadedModel& model);
    void handleLoadFailed(quint64 generation, const QString& message);
    void handleReply(quint64 id, const QString& reasoning, const QString& answer);
    void handleContextUsed(quint64 id, int tokens);
    void handlePromptProgress(quint64 id, int done, int total);
    void handleFinished(quint64 id, const QString& reason, const GenerationUsage& usage);
    void handleFailed(quint64 id, const QString& message);
    void handleStats(quint64 generation, const EngineStatsSnapshot& stats);

    QThread* m_thread = nullptr;
    detail::EngineWorker* m_worker = nullptr; // lives in m_thread
    std::shared_ptr<detail::HostRelay> m_relay;
    QTimer* m_statsTimer = nullptr;
    QTimer* m_idleTimer = nullptr;
    int m_idleUnloadMs = 0;
    RemoteClient* m_remoteClient = nullptr; // connected once, not owned
    std::unique_ptr<RemoteProvider> m_remoteProvider;
    QString m_remoteModel;                  // empty: local
    bool m_held = false;
    int m_statsIntervalMs = 1000;
    int m_stopGraceMs = 1500;
    State m_state = State::Empty;
    LoadedModel m_model;
    std::shared_ptr<Engine> m_shared;
    quint64 m_generation = 0; // bumped by every load and unload
    quint64 m_nextId = 1;
    QSet<quint64> m_live;
    QHash<quint64, int> m_contextUsed; // live local requests, by id
};

} // namespace hearth::app
