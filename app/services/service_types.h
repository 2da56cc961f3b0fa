// Plain value types the app services pass between threads and to the UI: how to load a model,
// what a loaded model is, sampling settings, chat messages, usage and engine statistics.
#pragma once

#include <QByteArray>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cstdint>

namespace hearth::app {

// How a model is loaded (the user's defaults live in Settings).
struct LoadSettings {
    int contextLength = 0;          // 0: the engine's default (min(training context, 4096))
    QString kvType = QStringLiteral("f16"); // "f16", "q8_0", "f32"
    int threads = 0;                // 0: all cores
    QString device = QStringLiteral("cpu"); // "cpu", "vulkan:0", "cuda:0" (hearth/devices.h ids)
    int gpuLayers = -1;             // layers on the device: -1 = as many as fit, 0 = none
    // Mixture-of-experts models on a GPU: layers whose experts stay in RAM and run on the CPU
    // (the first N; N >= the layer count: all). -1 = the fit's choice: none when the model fits,
    // else as few as make it fit (none with a fixed layer count).
    int cpuMoeLayers = -1;
    quint64 kvMemoryBytes = 0;      // 0: the engine decides
    int maxParallel = 4;            // sequences decoded together
    bool useMmap = true;            // false: read the whole file into memory at load
    int batchSize = 512;            // prompt tokens computed per step (long prompts are chunked)
    // Speculative decoding from each reply's own text (n-grams): drafts verified in one step,
    // only as far as it pays (the engine measures); the replies are the same either way.
    bool speculation = true;
    // A draft model for this load ("" = none): per model (Settings::draftModelFor), filled in by
    // whoever loads, not saved with the settings above. One that cannot draft for the model is
    // left out of the load, with the reason in LoadedModel::draftNote. The model's own path: its
    // multi-token-prediction head drafts (DraftModelFinder lists it so).
    QString draftModel;
    // The vision projector (llama.cpp's mmproj file) to load with the model ("" = none): filled
    // in by whoever loads, from the library's ModelEntry::projectorPath. One that fails to load
    // is left out (the model loads without images), with the reason in LoadedModel::visionNote.
    QString projectorPath;

    bool operator==(const LoadSettings&) const = default;
};

// A remote provider's model (EngineHost::useRemote) goes by the path "remote:<provider>/<model>"
// wherever a loaded model's path does; provider names hold no '/', model names may.
struct RemoteModelRef {
    QString provider;
    QString model;
};

inline QString remoteModelPath(const QString& provider, const QString& model) {
    return QStringLiteral("remote:%1/%2").arg(provider, model);
}

inline bool isRemoteModelPath(const QString& path) { return path.startsWith(QLatin1String("remote:")); }

// The provider and model a remote path names (both empty when `path` is a file's).
inline RemoteModelRef remoteModelOf(const QString& path) {
    if (!isRemoteModelPath(path)) return {};
    const QString rest = path.mid(7); // after "remote:"
    const qsizetype slash = rest.indexOf(QLatin1Char('/'));
    if (slash < 0) return {rest, QString()};
    return {rest.left(slash), rest.mid(slash + 1)};
}

// What the UI shows about the model that is loaded.
struct LoadedModel {
    QString path;
    QString architecture;
    QString name;
    int vocabSize = 0;
    int layers = 0;
    int contextLength = 0;
    int embeddingLength = 0;
    bool builtinChatTemplate = false; // the file has no template; ChatML is used
    QString kvType;
    quint64 kvBytes = 0;
    double loadSeconds = 0.0;
    QString device = QStringLiteral("cpu"); // where the first gpuLayers layers run
    int gpuLayers = 0;                      // layers on that device; the rest run on the CPU
    int cpuMoeLayers = 0;                   // of those, the first N whose experts run on the CPU
    QString fallbackReason;                 // why it runs on the CPU when another device was asked for
    QString draftModel;                     // the draft model's file name, when one drafts
    QString draftNote;                      // why the chosen draft model does not
    bool vision = false;                    // a projector is loaded: chats may carry images
    QString visionNote;                     // why the chosen projector was left out

    // A remote provider's model: no file, layers, quantization or KV cache of ours.
    bool isRemote() const { return isRemoteModelPath(path); }
};

// Sampling and length limits of one generation.
struct Sampling {
    float temperature = 0.8f; // <= 0: greedy
    int topK = 40;
    float topP = 0.95f;
    float minP = 0.05f;
    float repetitionPenalty = 1.0f;
    quint64 seed = 0;
    int maxTokens = 512;
    QStringList stopStrings;
    bool ignoreEos = false;
    // Constrained output: a GBNF grammar (hearth/grammar.h) every reply must be a sentence of;
    // "" for free text. One that does not parse fails the request with the reason.
    QString grammar;

    static Sampling greedy(int maxTokens) {
        Sampling s;
        s.temperature = 0.0f;
        s.topK = 0;
        s.topP = 1.0f;
        s.minP = 0.0f;
        s.maxTokens = maxTokens;
        return s;
    }
};

// A tool call an assistant turn made, as OpenAI writes it (the arguments as JSON text).
struct ChatToolCall {
    QString id;
    QString name;
    QString arguments;
};

// A file attached to a message as text (a text, Markdown or code file, or a PDF's text), or a
// part of one that retrieval found for the message's question (part > 0).
struct ChatDocument {
    QString name; // the file's name, as the model and the transcript see it
    QString text;
    // Too long to give the model whole: its parts are searched for each question instead, and
    // the parts found go with that question as excerpts.
    bool indexed = false;
    int part = 0; // an excerpt: the part's number in its file (from 1); 0: a whole file
    bool operator==(const ChatDocument&) const = default;
};

struct ChatMessage {
    QString role; // "system", "user", "assistant", "tool" (a tool's result)
    QString content;   // an assistant turn's answer only
    QString reasoning; // an assistant turn's reasoning (<think> or harmony analysis), if any
    // Images the message carries, each an encoded file's bytes as attached (PNG, JPEG, WebP,
    // GIF); the model sees them before the message's text.
    QList<QByteArray> images;
    QList<ChatToolCall> toolCalls; // an assistant turn's tool calls, in order
    QString toolCallId;            // a "tool" message: the id of the call it answers
    // Files attached as text: the model reads each before the message's text (chatRequestFor).
    QList<ChatDocument> documents;
};

// What one finished generation cost.
struct GenerationUsage {
    int promptTokens = 0;
    int cachedPromptTokens = 0;
    int completionTokens = 0;
    double queueMs = 0.0;
    double timeToFirstTokenMs = 0.0;
    double generationMs = 0.0;
    int draftTokens = 0;         // speculative decoding: tokens drafted and verified
    int acceptedDraftTokens = 0; //   and accepted
    // Decode speed after the first token (0 when fewer than two tokens).
    double tokensPerSecond() const {
        return generationMs > 0.0 && completionTokens > 1
                   ? 1000.0 * (completionTokens - 1) / generationMs
                   : 0.0;
    }
};

// A periodic snapshot of the engine's queues and KV cache.
struct EngineStatsSnapshot {
    int running = 0;
    int waiting = 0;
    int kvBlocksUsed = 0;
    int kvBlocksTotal = 0;
    qint64 kvTokensHeld = 0;
    quint64 prefixHitTokens = 0;
    quint64 prefixQueryTokens = 0;
    quint64 steps = 0;
};

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::LoadSettings)
Q_DECLARE_METATYPE(hearth::app::LoadedModel)
Q_DECLARE_METATYPE(hearth::app::Sampling)
Q_DECLARE_METATYPE(hearth::app::ChatMessage)
Q_DECLARE_METATYPE(hearth::app::ChatToolCall)
Q_DECLARE_METATYPE(hearth::app::ChatDocument)
Q_DECLARE_METATYPE(hearth::app::GenerationUsage)
Q_DECLARE_METATYPE(hearth::app::EngineStatsSnapshot)
