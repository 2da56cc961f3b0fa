// What every architecture gives the runtime: its dimensions, its weights bound from the file
// once, and build(), which describes one step of the model as a graph (graph/graph.h). Each
// architecture is one file in this folder; loadArchitecture picks it by general.architecture.
#pragma once

#include "graph/graph.h"
#include "graph/step.h"
#include "hearth/gguf.h"
#include "hearth/status.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace hearth::model {

// One layer's K/V row: nHeadKv heads of headDimK (K) and headDimV (V) values.
struct LayerKv {
    int nHeadKv = 0;
    int headDimK = 0;
    int headDimV = 0;
    int64_t kRow() const { return int64_t(nHeadKv) * headDimK; }
    int64_t vRow() const { return int64_t(nHeadKv) * headDimV; }
};

// One recurrent layer's per-sequence state, in F32 values per slot (0 and 0 for other layers):
// the convolution window and the delta-net matrices.
struct LayerState {
    int64_t convRow = 0;
    int64_t ssmRow = 0;
    uint64_t bytes() const { return uint64_t(convRow + ssmRow) * 4; }
};

struct ModelDims {
    std::string archName;
    int nLayer = 0;
    int nEmbd = 0;
    int nVocab = 0;
    // > 0: a logits row holds the scores of tokens [0, nLogits) only (a drafting head's shortlist
    // of the vocabulary's first, most frequent ids); token inputs still take the whole vocabulary.
    int nLogits = 0;
    int nCtxTrain = 0;
    std::vector<LayerKv> kv; // per layer
    std::vector<LayerState> state; // per layer; empty for models without recurrent layers
    // Encoders (bert): no logits, only the hidden rows embeddings pool; and attention without the
    // causal mask (causal false), so that each input is computed in one step.
    bool embeddingsOnly = false;
    bool causal = true;
    // > 0: a reranker (rank pooling): the hidden rows are its classification head's outputs, this
    // many per pooled token (the first of an encoder's input, the last of a decoder's: causal),
    // the first being the relevance score.
    int rankOutputs = 0;
    // > 0: learned absolute positions (bert's position_embd rows), the longest a sequence may be.
    int maxPositions = 0;
    // The graph takes input embeddings given with a step in place of some tokens' rows (an
    // image's: StepInput::EmbedRows, model::withGivenEmbeddings).
    bool givenEmbeddings = false;
    // An image's tokens attend to each other whatever their order (gemma3; llama.cpp's
    // non-causal image decode): they are computed in a step of their own (Batch::withinSequence).
    bool imagesAtOnce = false;
    // An image's tokens rotate by M-RoPE positions (qwen35): all at the temporal position where
    // the image starts, by their row and column in the height and width sections, the text after
    // it from that position plus the image's longer side in tokens (graph::BatchToken::ropePos).
    bool mrope = false;
    int logitWidth() const { return nLogits > 0 ? nLogits : nVocab; }
    bool recurrent() const {
        for (const LayerState& s : state)
            if (s.convRow + s.ssmRow > 0) return true;
        return false;
    }
    // Bytes of one sequence's recurrent state over every layer.
    uint64_t stateBytesPerSlot() const {
        uint64_t b = 0;
        for (const LayerState& s : state) b += s.bytes();
        return b;
    }
};

// How the K/V pools of a load are laid out: the graph's caches are [numBlocks * blockSize] rows.
struct KvSetup {
    quant::Type type = quant::Type::F16; // F32, F16 or Q8_0
    int blockSize = 16;
    int numBlocks = 0;
    // The longest sequence the load serves (the engine's context per sequence); 0 when not
    // given, and then a sequence may hold at most every slot of the pool.
    int64_t contextLength = 0;
    // Recurrent models: slots of per-sequence state (live sequences and prefix snapshots).
    int stateSlots = 0;
    int64_t slots() const { return int64_t(blockSize) * numBlocks; }
    int64_t sequenceLimit() const { return contextLength > 0 ? contextLength : slots(); }
};

// How a model is loaded, beside its file: with a vision projector (llama.cpp's --mmproj) given,
// architectures whose files are also text-only models (llama: LLaVA's text side) read image
// embeddings; the others take images or not whatever this says.
struct ArchitectureOptions {
    bool projector = false;
};

class Architecture {
public:
    virtual ~Architecture() = default;

    const ModelDims& dims() const { return m_dims; }
    const std::vector<graph::Weight>& weights() const { return m_weights; }
    // The file's bytes through reads rather than the mapping (embedding rows on the CPU).
    const std::shared_ptr<const gguf::DataReader>& reader() const { return m_reader; }
    // The weight holding the token embeddings, and the output projection (the same when tied).
    int32_t tokenEmbedding() const { return m_tokenEmbedding; }
    int32_t outputWeight() const { return m_output; }

    // Appends one step to g (made with this model's weights): the step inputs, every layer, and,
    // when shape.wanted > 0, the logits of the wanted rows as g.output().
    virtual void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const = 0;

    // A graph of this model for one step of this shape (its status says whether it built).
    graph::Graph buildGraph(const graph::StepShape& shape, const KvSetup& kv) const;

protected:
    // Sets m_reader for every architecture, once it has bound the file.
    friend Result<std::unique_ptr<Architecture>> loadArchitecture(const gguf::File& file,
                                                                  const ArchitectureOptions& options);
    friend Result<std::unique_ptr<Architecture>> loadMtpHead(const gguf::File& file, int shortlist);
    friend Result<std::unique_ptr<Architecture>> loadVisionTower(const gguf::File& file);

    ModelDims m_dims;
    std::vector<graph::Weight> m_weights;
    std::deque<std::vector<float>> m_copies; // vectors copied out of the file (what Weight::data points to)
    std::shared_ptr<const gguf::DataReader> m_reader;
    int32_t m_tokenEmbedding = -1, m_output = -1;
};

// Binds the file's architecture (general.architecture). Unknown architectures, missing keys or
// tensors and wrong shapes give one error naming the problem.
Result<std::unique_ptr<Architecture>> loadArchitecture(const gguf::File& file, const ArchitectureOptions& options = {});

// The file's multi-token-prediction head as a model of its own (speculative decoding's drafter):
// a step reads the target model's final normed hidden rows (StepInput::HiddenIn) beside its
// tokens, and gives logits and its own normed hidden rows. Unsupported for files without one.
// shortlist > 0: its logits cover only the first `shortlist` token ids (rounded up to a multiple
// of 64; all of them when that is the whole vocabulary): a draft is the argmax over the ids a
// byte-pair or unigram vocabulary lists first, its most frequent, for a fraction of the output
// matrix's bytes per drafted token. Drafts only propose, so the output is unchanged.
Result<std::unique_ptr<Architecture>> loadMtpHead(const gguf::File& file, int shortlist = 0);

// A projector file's vision encoder ("clip" GGUFs, llama.cpp's --mmproj) as a model whose step is
// one image: patches in (StepInput::HiddenIn), the image's embeddings out (HiddenRows). Gemma 3's
// SigLIP (siglip.cpp); other projector types are unsupported, by name.
Result<std::unique_ptr<Architecture>> loadVisionTower(const gguf::File& file);

// The general.architecture values loadArchitecture accepts.
std::vector<std::string> supportedArchitectures();

} // namespace hearth::model
