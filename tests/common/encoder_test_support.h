// What the encoder tests (bert, nomic-bert) share: an engine on a synthesized file, embedding
// requests, one input's vector, a long text for the tokenizer and attention, the BGE WordPiece
// vocabulary from the reference folder, and the check that batched inputs equal one by one.
#pragma once

#include "hearth/engine.h"
#include "reference_embeddings.h"
#include "test_support.h"

#include <QProcess>
#include <QString>
#include <QStringList>

#include <memory>
#include <string>
#include <vector>

namespace hearth::test {

inline Result<std::unique_ptr<Engine>> openEngine(const std::string& path, int maxBatchedTokens = 512,
                                                  const std::string& device = "cpu", int contextLength = 512) {
    EngineConfig c;
    c.device = device;
    c.gpuLayers = -1;
    c.modelPath = path;
    c.contextLength = contextLength;
    c.kvMemoryBytes = 32ull << 20;
    c.kvType = KvType::F32;
    c.maxBatchedTokens = maxBatchedTokens;
    return Engine::create(c);
}

inline EmbeddingRequest request(std::vector<std::vector<int32_t>> inputs, Pooling pooling = Pooling::Model) {
    EmbeddingRequest r;
    r.inputs = std::move(inputs);
    r.pooling = pooling;
    return r;
}

// One input's vector (empty, with a warning, when the engine refuses it).
inline std::vector<float> embedOne(Engine& e, std::vector<int32_t> ids, Pooling p = Pooling::Model) {
    auto res = embedAndWait(e, request({std::move(ids)}, p));
    if (!res) qWarning("%s", res.status().toString().c_str());
    return res ? res->vectors.at(0) : std::vector<float>{};
}

// The BGE WordPiece vocabulary that comes with llama.cpp's sources in the reference folder.
inline QString bgeVocabPath() {
    return qEnvironmentVariable("HEARTH_REF") + QStringLiteral("/llama.cpp-src/models/ggml-vocab-bert-bge.gguf");
}

// `hearth-cli synth --preset PRESET --type TYPE --vocab VOCAB -o OUT`; the error text when it fails.
inline QString synthPreset(const QString& preset, const QString& type, const QString& vocab, const std::string& out) {
    QProcess p;
    p.start(binDir() + QStringLiteral("/hearth-cli"),
            {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"), type,
             QStringLiteral("--vocab"), vocab, QStringLiteral("-o"), QString::fromStdString(out)});
    if (!p.waitForFinished(300000)) return QStringLiteral("synth did not finish");
    if (p.exitCode() != 0) return QString::fromUtf8(p.readAllStandardError());
    return {};
}

// About two hundred WordPiece tokens: numbers, rare words and punctuation.
inline const char* const kLong =
    "Hearth runs language models on your own computer. This sentence is here to make the input long: "
    "embeddings of a few hundred tokens must agree with the reference as well as short ones do, since every "
    "token attends to every other one, before and after it, in each of the encoder's layers. Numbers like "
    "3.14159, 2026 and 42 are split by the WordPiece tokenizer, and so are rare words such as "
    "antidisestablishmentarianism, floccinaucinihilipilification and pneumonoultramicroscopic. "
    "Punctuation (commas, semicolons; colons: and dashes - too) counts as tokens. Once more, to reach about "
    "two hundred tokens: the quick brown fox jumps over the lazy dog, the quick brown fox jumps over the lazy "
    "dog, the quick brown fox jumps over the lazy dog, and then it rests in the shade of an old oak tree.";

// Several inputs of different lengths in one request give what each gives alone (within 1e-5),
// under each pooling; the first two inputs must differ. Empty when so, else what failed.
inline QString batchedMismatch(Engine& e, const std::vector<const char*>& texts, const std::vector<Pooling>& poolings) {
    std::vector<std::vector<int32_t>> inputs;
    for (const char* t : texts) {
        auto ids = e.tokenizer().encode(t, true, false);
        if (!ids) return QString::fromStdString(ids.status().toString());
        inputs.push_back(*ids);
    }
    for (Pooling p : poolings) {
        auto all = embedAndWait(e, request(inputs, p));
        if (!all) return QString::fromStdString(all.status().toString());
        for (size_t i = 0; i < inputs.size(); ++i) {
            const double d = maxAbsDiff(embedOne(e, inputs[i], p), all->vectors[i]);
            if (!(d < 1e-5)) return QStringLiteral("input %1: %2").arg(i).arg(d);
        }
        if (!(maxAbsDiff(all->vectors[0], all->vectors[1]) > 1e-2)) return QStringLiteral("inputs 0 and 1 are equal");
    }
    return {};
}

} // namespace hearth::test
