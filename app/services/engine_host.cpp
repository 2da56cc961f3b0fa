// EngineHost: the engine lives on a worker QThread; token sinks post to the host's thread.
#include "services/engine_host.h"

#include "services/chat_reply.h"
#include "services/remote_provider.h"

#include "hearth/devices.h"
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/grammar.h"
#include "hearth/image.h"
#include "hearth/model_info.h"
#include "hearth/projector.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QMetaObject>
#include <QMutex>
#include <QMutexLocker>
#include <QThread>
#include <QTimer>

#include <spdlog/spdlog.h>

#include <map>
#include <utility>

namespace hearth::app {

struct EngineHost::Prompt {
    enum class Kind { Text, Tokens, Chat } kind = Kind::Text;
    QString text;
    QList<int> ids;
    QList<ChatMessage> messages;
    QJsonArray tools; // a chat's tools for the template (OpenAI's function list)
};

namespace detail {

// The only way work done on other threads reaches the host: queued calls, and none at all once
// the host is being destroyed (detach() under the same lock that every post takes).
struct HostRelay {
    QMutex mutex;
    EngineHost* host = nullptr;

    template <typename F> void post(F&& f) {
        QMutexLocker lock(&mutex);
        if (!host) return;
        EngineHost* h = host;
        QMetaObject::invokeMethod(
            h, [h, fn = std::forward<F>(f)]() mutable { fn(h); }, Qt::QueuedConnection);
    }
    void detach() {
        QMutexLocker lock(&mutex);
        host = nullptr;
    }
};

// Forwards one request's output from the engine thread to the host's thread, a chat reply's
// reasoning split from its answer here (so the GUI thread only receives values).
class RelaySink final : public TokenSink {
public:
    RelaySink(std::shared_ptr<HostRelay> relay, quint64 id, ReplyFormat format, int promptTokens)
        : m_relay(std::move(relay)), m_id(id), m_reader(format), m_used(promptTokens) {}

    // Each token counts in the context at once (contextUsedChanged), its text when the reader
    // lets it out.
    void onToken(const TokenInfo& token) override {
        if (token.choice != 0) return;
        const int used = ++m_used;
        const ReplyPiece piece = token.text.empty() ? ReplyPiece{} : m_reader.push(token.text);
        m_relay->post([id = m_id, used, reasoning = QString::fromStdString(piece.reasoning),
                       answer = QString::fromStdString(piece.answer)](EngineHost* h) {
            h->handleContextUsed(id, used);
            if (!reasoning.isEmpty() || !answer.isEmpty()) h->handleReply(id, reasoning, answer);
        });
    }
    void onFinish(FinishReason reason, const Usage& usage) override {
        forward(m_reader.finish()); // marker-like text held back at the very end
        GenerationUsage u;
        u.promptTokens = usage.promptTokens;
        u.cachedPromptTokens = usage.cachedPromptTokens;
        u.completionTokens = usage.completionTokens;
        u.queueMs = usage.queueMs;
        u.timeToFirstTokenMs = usage.timeToFirstTokenMs;
        u.generationMs = usage.generationMs;
        u.draftTokens = usage.draftTokens;
        u.acceptedDraftTokens = usage.acceptedDraftTokens;
        const QString why = QString::fromLatin1(finishReasonName(reason));
        m_relay->post([id = m_id, why, u](EngineHost* h) { h->handleFinished(id, why, u); });
    }
    void onError(const Status& error) override {
        const QString message = QString::fromStdString(error.toString());
        m_relay->post([id = m_id, message](EngineHost* h) { h->handleFailed(id, message); });
    }
    void onPromptProgress(int32_t done, int32_t total) override {
        m_relay->post([id = m_id, done, total](EngineHost* h) { h->handlePromptProgress(id, done, total); });
    }

private:
    void forward(const ReplyPiece& piece) {
        if (piece.empty()) return;
        m_relay->post([id = m_id, reasoning = QString::fromStdString(piece.reasoning),
                       answer = QString::fromStdString(piece.answer)](EngineHost* h) {
            h->handleReply(id, reasoning, answer);
        });
    }

    std::shared_ptr<HostRelay> m_relay;
    quint64 m_id;
    ReplyReader m_reader; // used on the engine thread only
    int m_used;           // prompt and reply tokens so far (engine thread)
};

namespace {

GenerationRequest toRequest(const Sampling& s) {
    GenerationRequest r;
    r.sampling.temperature = s.temperature;
    r.sampling.topK = s.topK;
    r.sampling.topP = s.topP;
    r.sampling.minP = s.minP;
    r.sampling.repetitionPenalty = s.repetitionPenalty;
    r.sampling.seed = s.seed;
    r.maxTokens = s.maxTokens;
    r.ignoreEos = s.ignoreEos;
    for (const QString& stop : s.stopStrings)
        if (!stop.isEmpty()) r.stopStrings.push_back(stop.toStdString());
    return r;
}

int imageCount(const QList<ChatMessage>& messages) {
    int n = 0;
    for (const ChatMessage& m : messages) n += int(m.images.size());
    return n;
}

// The messages with one image marker (and a line break) per image before each one's text; a
// marker the text itself holds is dropped, so that markers and images agree.
QList<ChatMessage> withImageMarkers(QList<ChatMessage> messages) {
    const QString marker = QString::fromLatin1(kImageMarker.data(), qsizetype(kImageMarker.size()));
    for (ChatMessage& m : messages) {
        m.content.remove(marker);
        QString markers;
        for (qsizetype i = 0; i < m.images.size(); ++i) markers += marker + QLatin1Char('\n');
        m.content.prepend(markers);
    }
    return messages;
}

LoadedModel toLoadedModel(const QString& path, const ModelSummary& s) {
    LoadedModel m;
    m.path = path;
    m.architecture = QString::fromStdString(s.architecture);
    m.name = QString::fromStdString(s.name);
    m.vocabSize = s.nVocab;
    m.layers = s.nLayer;
    m.contextLength = s.contextLength;
    m.embeddingLength = s.nEmbd;
    m.builtinChatTemplate = s.chatTemplateBuiltin;
    m.kvType = QString::fromStdString(s.kvType);
    m.kvBytes = s.kvBytes;
    return m;
}

} // namespace

// Owns the engine. Every member is used only on the worker thread.
class EngineWorker : public QObject {
public:
    explicit EngineWorker(std::shared_ptr<HostRelay> relay) : m_relay(std::move(relay)) {}

    void load(quint64 generation, const QString& path, const LoadSettings& settings) {
        release();
        EngineConfig config;
        config.modelPath = path.toStdString();
        config.contextLength = settings.contextLength;
        config.threads = settings.threads;
        config.kvMemoryBytes = settings.kvMemoryBytes;
        config.maxNumSeqs = std::max(1, settings.maxParallel);
        config.useMmap = settings.useMmap;
        config.maxBatchedTokens = std::max(16, settings.batchSize);
        config.speculation.ngram = settings.speculation;
        config.projectorPath = settings.projectorPath.toStdString();
        QString draftNote;
        // The model's own path stands for its multi-token-prediction head, when it has one.
        const bool ownHead = !settings.draftModel.isEmpty() &&
                             QFileInfo(settings.draftModel).canonicalFilePath() == QFileInfo(path).canonicalFilePath() &&
                             checkMtpHead(config.modelPath).isOk();
        if (ownHead) {
            config.speculation.mtp = true;
        } else if (!settings.draftModel.isEmpty()) {
            // Checked from the files' metadata first: a draft that cannot serve this model is left
            // out (and said), the model loads without it.
            const Status st = checkDraftModel(config.modelPath, settings.draftModel.toStdString(), settings.contextLength);
            if (st.isOk()) config.speculation.draftModel = settings.draftModel.toStdString();
            else draftNote = QString::fromStdString(st.message());
        }
        Result<KvType> kv = kvTypeFromName(settings.kvType.toStdString());
        if (!kv) {
            const QString message = QStringLiteral("unknown KV cache type '%1'").arg(settings.kvType);
            m_relay->post([generation, message](EngineHost* h) { h->handleLoadFailed(generation, message); });
            return;
        }
        config.kvType = *kv;
        QString fallbackReason;
        placeLayers(settings, config, fallbackReason);
        spdlog::info("engine host: loading {} on {} ({} GPU layers, experts of {} in RAM)", config.modelPath,
                     config.device, config.device == "cpu" ? 0 : config.gpuLayers, config.cpuMoeLayers);
        QElapsedTimer timer;
        timer.start();
        // Stages reach the host as values; a superseded load's are dropped there.
        config.onLoadProgress = [relay = m_relay, generation](const LoadProgress& p) {
            const QString stage = QString::fromStdString(p.stage);
            const double fraction = p.fraction;
            relay->post([generation, stage, fraction](EngineHost* h) {
                if (generation == h->m_generation && h->m_state == EngineHost::State::Loading)
                    Q_EMIT h->loadProgress(stage, fraction);
            });
        };
        Result<std::unique_ptr<Engine>> engine = Engine::create(config);
        if (!engine && config.device != "cpu") {
            // The GPU could not take it (driver, memory, an unsupported weight type): run on the
            // CPU and say why, rather than fail or fall back silently.
            fallbackReason = QStringLiteral("%1 could not load the model (%2); every layer runs on the CPU")
                                 .arg(QString::fromStdString(config.device),
                                      QString::fromStdString(engine.status().toString()));
            spdlog::warn("engine host: {}", fallbackReason.toStdString());
            config.device = "cpu";
            engine = Engine::create(config);
        }
        if (!engine && (!config.speculation.draftModel.empty() || config.speculation.mtp)) {
            draftNote = QString::fromStdString(engine.status().message());
            spdlog::warn("engine host: loading without the draft model: {}", draftNote.toStdString());
            config.speculation.draftModel.clear();
            config.speculation.mtp = false;
            engine = Engine::create(config);
        }
        QString visionNote;
        if (!engine && !config.projectorPath.empty()) {
            // A projector that cannot serve the model costs its images, not the model.
            visionNote = QString::fromStdString(engine.status().message());
            spdlog::warn("engine host: loading without the projector {}: {}", config.projectorPath,
                         visionNote.toStdString());
            config.projectorPath.clear();
            engine = Engine::create(config);
        }
        if (!engine) {
            const QString message = QString::fromStdString(engine.status().toString());
            spdlog::warn("engine host: loading {} failed: {}", config.modelPath, message.toStdString());
            m_relay->post([generation, message](EngineHost* h) { h->handleLoadFailed(generation, message); });
            return;
        }
        m_engine = std::move(*engine);
        m_generation = generation;
        LoadedModel model = toLoadedModel(path, m_engine->model());
        model.loadSeconds = double(timer.elapsed()) / 1000.0;
        model.device = QString::fromStdString(m_engine->model().device);
        model.gpuLayers = m_engine->model().gpuLayers;
        model.cpuMoeLayers = m_engine->model().cpuMoeLayers;
        model.fallbackReason = fallbackReason;
        model.draftModel = QString::fromStdString(m_engine->model().draftModel);
        model.draftNote = draftNote;
        model.vision = m_engine->model().vision && m_engine->projector() != nullptr;
        model.visionNote = visionNote;
        if (!draftNote.isEmpty()) spdlog::warn("engine host: no draft model: {}", draftNote.toStdString());
        spdlog::info("engine host: loaded {} ({} layers, context {}) in {:.2f} s",
                     config.modelPath, model.layers, model.contextLength, model.loadSeconds);
        std::shared_ptr<Engine> shared = m_engine;
        m_relay->post([generation, model, shared](EngineHost* h) {
            if (generation == h->m_generation) h->m_shared = shared;
            h->handleLoaded(generation, model);
        });
    }

    // Where the layers go: the chosen device, its layer count and the layers whose experts stay
    // in RAM, "as many as fit" resolved with the same estimate the settings page shows. Anything that sends every layer to the CPU
    // instead of the chosen GPU leaves a reason.
    static void placeLayers(const LoadSettings& settings, EngineConfig& config, QString& reason) {
        config.device = "cpu";
        config.gpuLayers = 0;
        config.cpuMoeLayers = 0;
        const std::string wanted = settings.device.toStdString();
        if (wanted.empty() || wanted == "cpu" || settings.gpuLayers == 0) return;
        const DeviceList devices = listDevices();
        const DeviceDescription* device = findDevice(devices, wanted);
        if (!device) {
            std::string notes;
            for (const std::string& n : devices.notes) notes += (notes.empty() ? "" : "; ") + n;
            reason = QStringLiteral("%1 was not found (%2); every layer runs on the CPU")
                         .arg(settings.device, notes.empty() ? QStringLiteral("no such device")
                                                             : QString::fromStdString(notes));
            return;
        }
        int layers = settings.gpuLayers, experts = std::max(0, settings.cpuMoeLayers);
        if (layers < 0) {
            Result<gguf::File> file = gguf::File::open(config.modelPath);
            Result<ModelInfo> info = file ? readModelInfo(*file) : Result<ModelInfo>(file.status());
            if (!info) return; // the load itself will report what is wrong with the file
            const uint32_t ctx = config.contextLength > 0 ? uint32_t(config.contextLength)
                                                          : std::min<uint32_t>(info->contextLength, 4096);
            const GpuFit fit = fitOnGpu(*file, *info, usableMemory(*device), ctx, kvElementType(config.kvType),
                                        config.maxNumSeqs, config.maxBatchedTokens,
                                        settings.cpuMoeLayers < 0 ? kFitExperts : settings.cpuMoeLayers);
            layers = fit.gpuLayers;
            experts = fit.cpuMoeLayers;
            if (layers == 0) {
                reason = QStringLiteral("not even one layer fits in %1's free memory; every layer runs on the CPU")
                             .arg(settings.device);
                return;
            }
        }
        config.device = wanted;
        config.gpuLayers = layers;
        config.cpuMoeLayers = experts;
    }

    // Frees the engine (joins its thread); requests still running are dropped.
    void release() {
        m_engine.reset();
        m_ids.clear();
    }

    void submit(quint64 id, const EngineHost::Prompt& prompt, const Sampling& sampling) {
        auto fail = [this, id](const QString& message) {
            m_relay->post([id, message](EngineHost* h) { h->handleFailed(id, message); });
        };
        if (!m_engine) return fail(QStringLiteral("no model is loaded"));
        ReplyFormat format = ReplyFormat::Plain;
        m_pendingImages.clear();
        Result<std::vector<int32_t>> ids = promptIds(prompt, format);
        if (!ids) return fail(QString::fromStdString(ids.status().toString()));
        if (ids->empty()) return fail(QStringLiteral("the prompt is empty"));
        GenerationRequest request = toRequest(sampling);
        if (!sampling.grammar.isEmpty()) {
            Result<std::shared_ptr<const grammar::Grammar>> g = grammar::parseGbnf(sampling.grammar.toStdString());
            if (!g) return fail(QStringLiteral("the output grammar: ") + QString::fromStdString(g.status().toString()));
            request.grammar = std::move(g).value();
        }
        request.prompt = std::move(*ids);
        request.images = std::exchange(m_pendingImages, {});
        // Keep prompt + reply inside the context: shorten the reply rather than refuse it.
        const int context = m_engine->model().contextLength;
        const int promptLen = int(request.prompt.size());
        if (context > 0) {
            if (promptLen >= context)
                return fail(QStringLiteral("the prompt (%1 tokens) does not fit the context (%2 tokens)")
                                .arg(promptLen)
                                .arg(context));
            request.maxTokens = std::min(request.maxTokens, context - promptLen);
        }
        request.sink = std::make_shared<RelaySink>(m_relay, id, format, promptLen);
        Result<RequestId> engineId = m_engine->submit(std::move(request));
        if (!engineId) return fail(QString::fromStdString(engineId.status().toString()));
        m_ids[id] = *engineId;
    }

    void cancel(quint64 id) {
        auto it = m_ids.find(id);
        if (it != m_ids.end() && m_engine) m_engine->cancel(it->second);
    }

    void forget(quint64 id) { m_ids.erase(id); }

    void stats() {
        if (!m_engine) return;
        const EngineStats s = m_engine->stats();
        EngineStatsSnapshot snap;
        snap.running = s.running;
        snap.waiting = s.waiting;
        snap.kvBlocksUsed = s.kvBlocksUsed;
        snap.kvBlocksTotal = s.kvBlocksTotal;
        snap.kvTokensHeld = s.kvTokensHeld;
        snap.prefixHitTokens = s.prefixHitTokens;
        snap.prefixQueryTokens = s.prefixQueryTokens;
        snap.steps = s.steps;
        m_relay->post([g = m_generation, snap](EngineHost* h) { h->handleStats(g, snap); });
    }

private:
    // The prompt's ids; a chat also says how its reply is read (from the rendered prompt).
    Result<std::vector<int32_t>> promptIds(const EngineHost::Prompt& prompt, ReplyFormat& format) {
        using Kind = EngineHost::Prompt::Kind;
        switch (prompt.kind) {
        case Kind::Text:
            return m_engine->tokenizer().encode(prompt.text.toStdString(), true, true);
        case Kind::Tokens: {
            std::vector<int32_t> ids(prompt.ids.begin(), prompt.ids.end());
            const int vocab = m_engine->model().nVocab;
            for (int32_t id : ids)
                if (id < 0 || id >= vocab)
                    return invalidArgument("token id " + std::to_string(id) + " is outside the vocabulary");
            return ids;
        }
        case Kind::Chat: {
            if (imageCount(prompt.messages) > 0) return chatWithImages(prompt.messages, prompt.tools, format);
            const tmpl::ChatRequest chat = chatRequestFor(prompt.messages, prompt.tools);
            Result<std::string> rendered = m_engine->renderChat(chat);
            if (!rendered) return rendered.status();
            format = replyFormatFor(*rendered);
            return m_engine->encodeChat(chat);
        }
        }
        return internalError("unknown prompt kind");
    }

    // A chat whose messages carry images: each decoded here, one image marker per image at the
    // start of its message (as llama.cpp and Ollama place them), encoded by the projector.
    Result<std::vector<int32_t>> chatWithImages(const QList<ChatMessage>& messages, const QJsonArray& tools,
                                                ReplyFormat& format) {
        const ModelSummary& m = m_engine->model();
        if (!m.takesImages)
            return unsupported("the model (" + m.architecture + ") does not take images; choose a vision model");
        if (!m_engine->projector())
            return unsupported("no vision projector is loaded for this model, so it cannot see images (put its "
                               "mmproj .gguf file beside the model and load it again)");
        std::vector<Image> decoded;
        for (const ChatMessage& message : messages)
            for (const QByteArray& bytes : message.images) {
                const auto* data = reinterpret_cast<const uint8_t*>(bytes.constData());
                Result<Image> image = decodeImage(std::span<const uint8_t>(data, size_t(bytes.size())));
                if (!image)
                    return image.status().withContext("image " + std::to_string(decoded.size() + 1));
                decoded.push_back(std::move(image).value());
            }
        const tmpl::ChatRequest chat = chatRequestFor(withImageMarkers(messages), tools);
        Result<std::string> rendered = m_engine->renderChat(chat);
        if (!rendered) return rendered.status();
        format = replyFormatFor(*rendered);
        std::vector<PromptImage> images;
        Result<std::vector<int32_t>> ids = encodeChatWithImages(*m_engine, chat, decoded, images);
        if (ids) m_pendingImages = std::move(images);
        return ids;
    }

    std::shared_ptr<HostRelay> m_relay;
    std::vector<PromptImage> m_pendingImages; // of the prompt promptIds() encoded last
    std::shared_ptr<Engine> m_engine; // shared with the embedded server while it serves it
    quint64 m_generation = 0;
    std::map<quint64, RequestId> m_ids; // host id -> engine id, while running
};

} // namespace detail

EngineHost::EngineHost(QObject* parent)
    : QObject(parent), m_relay(std::make_shared<detail::HostRelay>()) {
    qRegisterMetaType<LoadedModel>();
    qRegisterMetaType<GenerationUsage>();
    qRegisterMetaType<EngineStatsSnapshot>();
    m_relay->host = this;
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("hearth-engine-host"));
    m_worker = new detail::EngineWorker(m_relay);
    m_worker->moveToThread(m_thread);
    m_thread->start();
    m_statsTimer = new QTimer(this);
    connect(m_statsTimer, &QTimer::timeout, this, &EngineHost::pollStats);
    m_idleTimer = new QTimer(this);
    m_idleTimer->setSingleShot(true);
    connect(m_idleTimer, &QTimer::timeout, this, &EngineHost::idleTimeout);
}

void EngineHost::setIdleUnloadMs(int ms) {
    m_idleUnloadMs = std::max(0, ms);
    armIdleTimer();
}

void EngineHost::setHeld(bool held) {
    m_held = held;
    armIdleTimer();
}

// (Re)starts the idle countdown when the model sits idle; stops it otherwise.
void EngineHost::armIdleTimer() {
    if (m_idleUnloadMs > 0 && m_state == State::Ready && m_live.isEmpty() && !m_held && !isRemote())
        m_idleTimer->start(m_idleUnloadMs);
    else
        m_idleTimer->stop();
}

void EngineHost::idleTimeout() {
    if (m_idleUnloadMs <= 0 || m_state != State::Ready || !m_live.isEmpty() || m_held) return;
    const QString path = m_model.path;
    spdlog::info("engine host: unloading {} after {} s idle", path.toStdString(), m_idleUnloadMs / 1000);
    unloadModel();
    Q_EMIT idleUnloaded(path);
}

void EngineHost::useRemote(const RemoteProvider& provider, const QString& model, RemoteClient* client) {
    if (!client) return;
    if (m_state != State::Empty || isRemote()) unloadModel();
    if (m_remoteClient != client) {
        if (m_remoteClient) disconnect(m_remoteClient, nullptr, this, nullptr);
        m_remoteClient = client;
        connect(client, &RemoteClient::tokenReceived, this,
                [this](quint64 id, const QString& text) { handleReply(id, QString(), text); });
        connect(client, &RemoteClient::reasoningReceived, this,
                [this](quint64 id, const QString& text) { handleReply(id, text, QString()); });
        connect(client, &RemoteClient::finished, this, &EngineHost::handleFinished);
        connect(client, &RemoteClient::failed, this, &EngineHost::handleFailed);
        connect(client, &QObject::destroyed, this, [this] {
            m_remoteClient = nullptr;
            if (isRemote()) unloadModel();
        });
    }
    m_remoteProvider = std::make_unique<RemoteProvider>(provider);
    m_remoteModel = model;
    LoadedModel m;
    m.path = remoteModelPath(provider.name, model);
    m.name = model;
    m.architecture = QStringLiteral("remote");
    m.device = QStringLiteral("remote:%1").arg(provider.name);
    m_model = m;
    setState(State::Ready);
    Q_EMIT loaded(m_model);
}

EngineHost::~EngineHost() {
    m_relay->detach();
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w,
        [w] {
            w->release();
            QThread::currentThread()->quit();
        },
        Qt::QueuedConnection);
    m_thread->wait();
    delete m_worker;
}

void EngineHost::setState(State s) {
    if (m_state == s) return;
    m_state = s;
    if (s == State::Ready && m_statsIntervalMs > 0) m_statsTimer->start(m_statsIntervalMs);
    if (s != State::Ready) m_statsTimer->stop();
    armIdleTimer();
    Q_EMIT stateChanged(s);
}

void EngineHost::loadModel(const QString& path, const LoadSettings& settings) {
    if (isRemote()) unloadModel();
    const quint64 generation = ++m_generation;
    // Requests of the current model end when the worker replaces it.
    const QList<quint64> live = m_live.values();
    for (quint64 id : live) handleFinished(id, QStringLiteral("cancelled"), {});
    m_shared.reset(); // the old engine can go as soon as the worker drops it
    setState(State::Loading);
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, generation, path, settings] { w->load(generation, path, settings); },
        Qt::QueuedConnection);
}

void EngineHost::unloadModel() {
    ++m_generation;
    const QList<quint64> live = m_live.values();
    for (quint64 id : live) handleFinished(id, QStringLiteral("cancelled"), {});
    const bool wasLoaded = m_state != State::Empty;
    if (m_remoteClient)
        for (quint64 id : live) m_remoteClient->stop(id);
    m_remoteModel.clear();
    m_remoteProvider.reset();
    m_model = {};
    m_shared.reset();
    setState(State::Empty);
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [w] { w->release(); }, Qt::QueuedConnection);
    if (wasLoaded) Q_EMIT unloaded();
}

quint64 EngineHost::sendText(const QString& prompt, const Sampling& sampling) {
    Prompt p;
    p.kind = Prompt::Kind::Text;
    p.text = prompt;
    return send(std::move(p), sampling);
}

quint64 EngineHost::sendTokens(const QList<int>& promptIds, const Sampling& sampling) {
    Prompt p;
    p.kind = Prompt::Kind::Tokens;
    p.ids = promptIds;
    return send(std::move(p), sampling);
}

quint64 EngineHost::sendChat(const QList<ChatMessage>& messages, const Sampling& sampling, const QJsonArray& tools) {
    Prompt p;
    p.kind = Prompt::Kind::Chat;
    p.messages = messages;
    p.tools = tools;
    return send(std::move(p), sampling);
}

quint64 EngineHost::send(Prompt prompt, const Sampling& sampling) {
    const quint64 id = m_nextId++;
    m_live.insert(id);
    m_idleTimer->stop();
    if (isRemote() && m_remoteClient) {
        m_live.remove(id);
        if (prompt.kind != Prompt::Kind::Chat) {
            m_live.insert(id);
            failSoon(id, QStringLiteral("a remote model takes chats only"));
            return id;
        }
        // The client's ids are its own (from 2^48): the request is known by that one.
        const quint64 remoteId = m_remoteClient->sendChat(*m_remoteProvider, m_remoteModel, prompt.messages, sampling, prompt.tools);
        m_live.insert(remoteId);
        return remoteId;
    }
    if (m_state != State::Ready) {
        failSoon(id, m_state == State::Loading ? QStringLiteral("the model is still loading")
                                               : QStringLiteral("no model is loaded"));
        return id;
    }
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, id, prompt = std::move(prompt), sampling] { w->submit(id, prompt, sampling); },
        Qt::QueuedConnection);
    return id;
}

void EngineHost::failSoon(quint64 id, const QString& message) {
    // Queued so that the caller has the id before the signal arrives.
    QMetaObject::invokeMethod(
        this, [this, id, message] { handleFailed(id, message); }, Qt::QueuedConnection);
}

void EngineHost::stop(quint64 id) {
    if (!m_live.contains(id)) return;
    if (isRemote() && m_remoteClient && m_remoteClient->activeRequests().contains(id)) {
        m_remoteClient->stop(id);
        return;
    }
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [w, id] { w->cancel(id); }, Qt::QueuedConnection);
    // The engine takes the cancel between steps; the reply ends for the user either way.
    QTimer::singleShot(m_stopGraceMs, this, [this, id] {
        if (m_live.contains(id)) handleFinished(id, QStringLiteral("cancelled"), {});
    });
}

void EngineHost::stopAll() {
    const QList<quint64> live = m_live.values();
    for (quint64 id : live) stop(id);
}

void EngineHost::setStatsInterval(int ms) {
    m_statsIntervalMs = std::max(0, ms);
    if (m_statsIntervalMs == 0) m_statsTimer->stop();
    else if (m_state == State::Ready) m_statsTimer->start(m_statsIntervalMs);
}

void EngineHost::pollStats() {
    if (isRemote()) return; // the provider's queues and cache are its own
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [w] { w->stats(); }, Qt::QueuedConnection);
}

void EngineHost::handleLoaded(quint64 generation, const LoadedModel& model) {
    if (generation != m_generation) return; // superseded by a later load or an unload
    m_model = model;
    setState(State::Ready);
    Q_EMIT loaded(m_model);
}

void EngineHost::handleLoadFailed(quint64 generation, const QString& message) {
    if (generation != m_generation) return;
    m_model = {};
    setState(State::Empty);
    Q_EMIT loadFailed(message);
}

void EngineHost::handleReply(quint64 id, const QString& reasoning, const QString& answer) {
    if (!m_live.contains(id)) return;
    if (!reasoning.isEmpty()) Q_EMIT reasoningReceived(id, reasoning);
    if (!answer.isEmpty() && m_live.contains(id)) Q_EMIT tokenReceived(id, answer);
}

void EngineHost::handleContextUsed(quint64 id, int tokens) {
    if (!m_live.contains(id)) return;
    m_contextUsed[id] = tokens;
    Q_EMIT contextUsedChanged(id, tokens);
}

void EngineHost::handlePromptProgress(quint64 id, int done, int total) {
    if (m_live.contains(id)) Q_EMIT promptProgress(id, done, total);
}

int EngineHost::contextUsed(quint64 id) const { return m_contextUsed.value(id, 0); }

void EngineHost::handleFinished(quint64 id, const QString& reason, const GenerationUsage& usage) {
    m_contextUsed.remove(id);
    if (!m_live.remove(id)) return;
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [w, id] { w->forget(id); }, Qt::QueuedConnection);
    armIdleTimer();
    Q_EMIT finished(id, reason, usage);
}

void EngineHost::handleFailed(quint64 id, const QString& message) {
    m_contextUsed.remove(id);
    if (!m_live.remove(id)) return;
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [w, id] { w->forget(id); }, Qt::QueuedConnection);
    armIdleTimer();
    Q_EMIT failed(id, message);
}

void EngineHost::handleStats(quint64 generation, const EngineStatsSnapshot& stats) {
    if (generation == m_generation && m_state == State::Ready) Q_EMIT statsUpdated(stats);
}

// Trimming runs on the worker thread with the loaded engine's tokenizer and template; the
// trimmed chat then goes through the worker's usual submit.
quint64 EngineHost::sendChatFitting(const QList<ChatMessage>& messages, const Sampling& sampling,
                                    const QJsonArray& tools) {
    if (isRemote()) return sendChat(messages, sampling, tools); // the remote server manages its context
    const quint64 id = m_nextId++;
    m_live.insert(id);
    if (m_state != State::Ready || !m_shared) {
        failSoon(id, m_state == State::Loading ? QStringLiteral("the model is still loading")
                                               : QStringLiteral("no model is loaded"));
        return id;
    }
    detail::EngineWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w,
        [w, id, messages, sampling, tools, engine = m_shared, relay = m_relay] {
            QList<ChatMessage> kept = messages;
            const int context = engine->model().contextLength;
            const int room = std::min(std::max(1, sampling.maxTokens), std::max(16, context / 4));
            const qsizetype first = !kept.isEmpty() && kept.first().role == QStringLiteral("system") ? 1 : 0;
            int dropped = 0;
            // An image costs about its projector's embeddings per image (Gemma 3: 256).
            const int perImage = engine->projector() ? int(engine->projector()->tokensPerImage) : 0;
            while (context > 0 && kept.size() - first > 1) {
                Result<std::vector<int32_t>> ids = engine->encodeChat(chatRequestFor(kept, tools));
                if (!ids || int(ids->size()) + perImage * detail::imageCount(kept) + room <= context) break;
                // One turn: the message at `first` and the replies after it, up to the next user
                // message; the last message stays.
                qsizetype end = first + 1;
                while (end < kept.size() - 1 && kept[end].role != QStringLiteral("user")) ++end;
                dropped += int(end - first);
                kept.erase(kept.begin() + first, kept.begin() + end);
            }
            relay->post([id, dropped](EngineHost* h) {
                if (h->m_live.contains(id)) Q_EMIT h->chatTrimmed(id, dropped);
            });
            Prompt p;
            p.kind = Prompt::Kind::Chat;
            p.messages = std::move(kept);
            p.tools = tools;
            w->submit(id, p, sampling);
        },
        Qt::QueuedConnection);
    return id;
}

} // namespace hearth::app
