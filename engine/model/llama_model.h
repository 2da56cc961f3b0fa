// The llama family of decoder-only transformers (llama 2/3.x, Mistral, TinyLlama, Qwen2 with QKV
// bias, Qwen3 with Q/K RMS norm): hyper-parameters and weights bound from a GGUF file, and a
// plain fp32 reference forward pass over a batch of tokens from several sequences that reads and
// writes K/V through block tables.
#pragma once

#include "backend/cpu/paged_kv.h"
#include "backend/cpu/ref_ops.h"
#include "hearth/gguf.h"
#include "hearth/status.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hearth::cpu {
class ThreadPool;
class RepackedWeights;
}

namespace hearth::model {

enum class Arch { Llama, Qwen2, Qwen3 };

struct LlamaHParams {
    Arch arch = Arch::Llama;
    std::string archName;
    int nLayer = 0;
    int nEmbd = 0;
    int nFf = 0;
    int nHead = 0;
    int nHeadKv = 0;
    int headDim = 0; // key_length (= value_length)
    int nRot = 0;    // rope.dimension_count
    float ropeBase = 10000.0f;
    float rmsEps = 1e-5f;
    int nVocab = 0;
    int nCtxTrain = 0;
    bool neoxRope = false;
};

// One vector weight (norm or bias): F32 values, n of them.
struct Vector {
    const float* data = nullptr;
    int64_t n = 0;
};

struct LayerWeights {
    Vector attnNorm, ffnNorm;
    cpu::ref::Matrix wq, wk, wv, wo; // wq: [nHead*headDim][nEmbd], wo: [nEmbd][nHead*headDim]
    std::optional<Vector> bq, bk, bv;  // qwen2
    std::optional<Vector> qNorm, kNorm; // qwen3: [headDim]
    cpu::ref::Matrix wGate, wUp, wDown; // gate/up: [nFf][nEmbd], down: [nEmbd][nFf]
};

// One token of a batch: which sequence, at which position, and whether its logits are wanted.
struct BatchToken {
    int32_t token = 0;
    int32_t pos = 0;
    int seq = 0;            // index into Batch::blockTables
    bool wantLogits = false;
};

struct Batch {
    std::vector<BatchToken> tokens;
    std::vector<std::span<const int32_t>> blockTables; // per sequence
};

class LlamaModel {
public:
    // Binds every tensor (pointers into the file's mapping, which must outlive the model) and
    // checks shapes and types; errors name the tensor or key.
    static Result<std::unique_ptr<LlamaModel>> load(const gguf::File& file);

    const LlamaHParams& hparams() const { return m_hp; }

    // Read-only views of the bound weights, for device backends that upload them.
    const cpu::ref::Matrix& tokenEmbedding() const { return m_tokEmbd; }
    const cpu::ref::Matrix& outputMatrix() const { return m_output; }
    const Vector& outputNorm() const { return m_outputNorm; }
    const std::vector<float>& ropeFreqs() const { return m_ropeFreqs; }
    const LayerWeights& layer(int i) const { return m_layers[size_t(i)]; }

    // Runs the batch: writes each token's K/V into `kv` at its slot, attends causally over its
    // sequence's positions [0, pos], and writes logits [nWanted][nVocab] for the tokens that want
    // them, in batch order.
    Status forward(const Batch& batch, cpu::PagedKvStore& kv, std::vector<float>& logits) const;

    // The same computation on the optimized CPU kernels (batched matMul, threads from `pool`,
    // nullptr: the calling thread). Agrees with forward() to activation-quantization accuracy.
    Status forwardCpu(const Batch& batch, cpu::PagedKvStore& kv, std::vector<float>& logits,
                      cpu::ThreadPool* pool) const;

    // The part of forwardCpu after layer firstLayer - 1: layers [firstLayer, nLayer) from the
    // hidden state x [n][nEmbd] (overwritten), K/V of layer l in kv's layer l - firstLayer, then
    // the logits. A layer split runs its CPU half with it.
    Status forwardCpuFrom(const Batch& batch, int firstLayer, std::vector<float>& x,
                          cpu::PagedKvStore& kv, std::vector<float>& logits,
                          cpu::ThreadPool* pool) const;

    // Rearranges the weight matrices for this CPU's fastest kernels (cpu/repack.h) and hands the
    // originals' pages back to the OS; done once (forwardCpu calls it on first use), returns the
    // first call's status. Costs about one pass over the weights; resident memory stays near
    // the model's size. HEARTH_CPU_REPACK=0 in the environment turns it off.
    // Only layers from firstLayer on are repacked (a layer split's device layers are not).
    Status prepareCpu(cpu::ThreadPool* pool, int firstLayer = 0) const;
    size_t cpuRepackedBytes() const; // 0 before prepareCpu or when nothing was repacked

private:
    LlamaHParams m_hp;
    cpu::ref::Matrix m_tokEmbd, m_output;
    Vector m_outputNorm;
    std::vector<std::vector<float>> m_vectorCopies; // what every Vector points into
    std::vector<float> m_ropeFreqs; // llama3 frequency factors, empty when absent
    std::vector<LayerWeights> m_layers;
    // Built by prepareCpu (llama_forward_cpu.cpp).
    mutable std::once_flag m_cpuOnce;
    mutable Status m_cpuStatus;
    mutable std::shared_ptr<const cpu::RepackedWeights> m_cpuPacked;
    std::shared_ptr<const gguf::DataReader> m_reader; // the file's bytes, off the mapping
    mutable bool m_embdByRead = false; // embedding rows read with m_reader (prepareCpu)
    void repackCpu(cpu::ThreadPool* pool, int firstLayer) const; // prepareCpu's repacking
};

Result<LlamaHParams> readLlamaHParams(const gguf::File& file);

} // namespace hearth::model
