// The llama-family forward pass on the optimized CPU kernels: every linear layer is one batched,
// multithreaded matMul over all tokens of the step (each weight row is decoded once per step,
// which is where continuous batching pays), and attention runs in parallel over (sequence, KV head, run of tokens) straight from the paged cache.
// The weights are repacked on first use for the fastest kernels of this CPU (repack.h).
// The reference forward in llama_model.cpp is its oracle.
#include "model/llama_model.h"

#include "backend/cpu/activations.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>

namespace hearth::model {

namespace {

void addBiasRows(float* x, int64_t n, int64_t dim, const std::optional<Vector>& b) {
    if (!b) return;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t d = 0; d < dim; ++d) x[i * dim + d] += b->data[d];
}

// RoPE with precomputed angles: cs holds (cos θ_i, sin θ_i) for i < half, computed as
// cpu::ref::rope does, so results are bitwise the same as calling it; the angles depend only on
// the position, so each token's table serves every head of every layer.
void ropeAngles(int64_t pos, int64_t nRot, float freqBase, std::span<const float> freqFactors,
                double* cs) {
    const int64_t half = nRot / 2;
    for (int64_t i = 0; i < half; ++i) {
        double theta = double(pos) * std::pow(double(freqBase), -2.0 * double(i) / double(nRot));
        if (size_t(i) < freqFactors.size()) theta /= double(freqFactors[size_t(i)]);
        cs[2 * i] = std::cos(theta);
        cs[2 * i + 1] = std::sin(theta);
    }
}

void ropeApply(float* x, int64_t half, bool neox, const double* cs) {
    for (int64_t i = 0; i < half; ++i) {
        const double c = cs[2 * i], s = cs[2 * i + 1];
        const int64_t a = neox ? i : 2 * i;
        const int64_t b = neox ? i + half : 2 * i + 1;
        const double x0 = x[a], x1 = x[b];
        x[a] = float(x0 * c - x1 * s);
        x[b] = float(x0 * s + x1 * c);
    }
}

void parallel(cpu::ThreadPool* pool, int64_t n, const auto& fn) {
    if (pool) pool->parallelFor(n, fn);
    else fn(int64_t(0), n);
}

// One attention work item: a sequence's KV head over a run of its tokens.
struct AttentionItem {
    size_t seq;
    int64_t kvHead, first, count;
};

// A step's buffers, kept by the thread between steps: once a step of some size has run, steps
// up to that size make no heap allocations (vectors are refilled, their capacity kept). The
// largest step's buffers stay allocated: ~70 MB after a 2,048-token step of a 2,048-wide model.
struct StepScratch {
    std::vector<float> x, xn, q, att, k, v, gate, up, tmp, wantedRows;
    std::vector<uint8_t> raw;
    std::vector<double> ropeCs;
    std::vector<int32_t> seqMaxPos;
    std::vector<std::vector<size_t>> seqTokens;
    std::vector<std::vector<int64_t>> seqRows;
    std::vector<std::vector<int32_t>> seqPositions;
    std::vector<AttentionItem> items;
};
thread_local StepScratch tl_step;

// v holds `count` copies of value (zeros by default), reusing its memory.
template <typename T> std::vector<T>& refill(std::vector<T>& v, int64_t count, T value = T()) {
    v.assign(static_cast<size_t>(count), value);
    return v;
}

// v holds `count` empty vectors, each keeping its memory.
template <typename T> std::vector<std::vector<T>>& emptied(std::vector<std::vector<T>>& v, size_t count) {
    if (v.size() < count) v.resize(count);
    for (auto& e : v) e.clear();
    return v;
}

} // namespace

Status LlamaModel::prepareCpu(cpu::ThreadPool* pool, int firstLayer) const {
    std::call_once(m_cpuOnce, [&] {
        repackCpu(pool, firstLayer);
        // Unless the token-embedding table doubles as an output matrix used in place, its rows
        // are read from the file (pread) rather than the mapping: random lookups would otherwise
        // map the pages around each row (2 MiB with a huge-page page cache) until the table is
        // resident, which is its size again in memory for a table a step reads a few rows of.
        const bool usedInPlace =
            m_output.data == m_tokEmbd.data && !(m_cpuPacked && m_cpuPacked->find(m_output));
        m_embdByRead = !usedInPlace && m_reader != nullptr;
    });
    return m_cpuStatus;
}

void LlamaModel::repackCpu(cpu::ThreadPool* pool, int firstLayer) const {
    // HEARTH_CPU_REPACK=0 keeps the plain kernels on the mapped weights (A/B measurements).
    const char* env = std::getenv("HEARTH_CPU_REPACK");
    if (env && std::string(env) == "0") return;
    std::vector<cpu::ref::Matrix> all;
    for (size_t l = size_t(std::clamp(firstLayer, 0, m_hp.nLayer)); l < m_layers.size(); ++l)
        for (const LayerWeights& L = m_layers[l];
             const cpu::ref::Matrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.wGate, &L.wUp, &L.wDown})
            all.push_back(*w);
    all.push_back(m_output);
    auto packed = std::make_shared<cpu::RepackedWeights>();
    m_cpuStatus = packed->addAll(all, /*releaseSource=*/true, pool);
    if (m_cpuStatus.isOk()) m_cpuPacked = std::move(packed);
}

size_t LlamaModel::cpuRepackedBytes() const { return m_cpuPacked ? m_cpuPacked->bytes() : 0; }

Status LlamaModel::forwardCpu(const Batch& batch, cpu::PagedKvStore& kv, std::vector<float>& logits,
                              cpu::ThreadPool* pool) const {
    const int64_t n = int64_t(batch.tokens.size()), E = m_hp.nEmbd;
    HEARTH_RETURN_IF_ERROR(prepareCpu(pool, 0));
    // x [n][E]: each token's embedding row.
    std::vector<float>& x = refill(tl_step.x, n * E);
    std::vector<uint8_t>& raw = refill(tl_step.raw, m_embdByRead ? int64_t(m_tokEmbd.rowBytes) : 0);
    for (int64_t i = 0; i < n; ++i) {
        const int32_t token = batch.tokens[size_t(i)].token;
        if (token < 0 || token >= m_hp.nVocab)
            return outOfRange("token id " + std::to_string(token) + " outside the vocabulary");
        if (!m_embdByRead) {
            HEARTH_RETURN_IF_ERROR(cpu::ref::getRow(m_tokEmbd, token, &x[size_t(i * E)]));
            continue;
        }
        HEARTH_RETURN_IF_ERROR(
            m_reader->read(m_tokEmbd.data + uint64_t(token) * m_tokEmbd.rowBytes, raw.size(), raw.data()));
        cpu::ref::Matrix row = m_tokEmbd;
        row.data = raw.data();
        row.rows = 1;
        HEARTH_RETURN_IF_ERROR(cpu::ref::getRow(row, 0, &x[size_t(i * E)]));
    }
    return forwardCpuFrom(batch, 0, x, kv, logits, pool);
}

Status LlamaModel::forwardCpuFrom(const Batch& batch, int firstLayer, std::vector<float>& x,
                                  cpu::PagedKvStore& kv, std::vector<float>& logits,
                                  cpu::ThreadPool* pool) const {
    const LlamaHParams& hp = m_hp;
    const int64_t n = int64_t(batch.tokens.size());
    const int64_t E = hp.nEmbd, D = hp.headDim, F = hp.nFf, qDim = int64_t(hp.nHead) * D,
                  kvDim = int64_t(hp.nHeadKv) * D, group = hp.nHead / hp.nHeadKv;
    if (firstLayer < 0 || firstLayer > hp.nLayer) return invalidArgument("first layer out of range");
    if (kv.rowSize() != kvDim || kv.layers() < hp.nLayer - firstLayer)
        return invalidArgument("KV store shape does not match the model");
    if (int64_t(x.size()) != n * E) return invalidArgument("hidden state does not match the batch");
    HEARTH_RETURN_IF_ERROR(prepareCpu(pool, firstLayer));
    const cpu::RepackedWeights* packed = m_cpuPacked.get();
    auto findPacked = [&](const cpu::ref::Matrix& w) { return packed ? packed->find(w) : nullptr; };
    // y[n][w.rows] = x[n][w.cols] · Wᵀ, on the repacked copy when there is one.
    auto matMul = [&](const cpu::ref::Matrix& w, const float* xIn, int64_t rowsIn, float* yOut) {
        return cpu::matMul(w, findPacked(w), xIn, rowsIn, yOut, pool);
    };
    // The matrices that multiply the same activations, one job at decode (q, k and v apart were
    // ~2.5% slower 1B Q4_0 decode steps, measured alternating steps in one process).
    using Shared3 = std::array<cpu::SharedMatMul, 3>;
    using Shared2 = std::array<cpu::SharedMatMul, 2>;
    auto qkvOf = [&](const LayerWeights& L, float* qOut, float* kOut, float* vOut) {
        return Shared3{{{&L.wq, findPacked(L.wq), qOut}, {&L.wk, findPacked(L.wk), kOut},
                        {&L.wv, findPacked(L.wv), vOut}}};
    };
    auto gateUpOf = [&](const LayerWeights& L, float* gateOut, float* upOut) {
        return Shared2{{{&L.wGate, findPacked(L.wGate), gateOut}, {&L.wUp, findPacked(L.wUp), upOut}}};
    };
    auto nextQkv = [&](int l) { return qkvOf(m_layers[size_t(l + 1)], nullptr, nullptr, nullptr); };
    auto one = [&](const cpu::ref::Matrix& w) {
        return std::array<cpu::SharedMatMul, 1>{{{&w, findPacked(w), nullptr}}};
    };
    // At decode the threads prefetch the next job's weights while they would wait: the worker
    // after each job (its chunk, while this thread does the small steps in between), this thread
    // before each (its chunk of the job after, once its part is done). Measured alternating steps
    // in one process, 1B Q4_0 at 2 threads: 1.5-1.7% shorter steps with both than with neither,
    // 0.6-1.6% with both than with the worker's alone.
    const size_t nSeq = batch.blockTables.size();
    StepScratch& S = tl_step;
    std::vector<std::vector<size_t>>& seqTokens = emptied(S.seqTokens, nSeq);
    std::vector<int32_t>& seqMaxPos = refill(S.seqMaxPos, int64_t(nSeq), int32_t(-1));
    for (int64_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[size_t(i)];
        if (t.seq < 0 || size_t(t.seq) >= nSeq)
            return invalidArgument("batch token names an unknown sequence");
        if (t.pos < 0) return invalidArgument("negative position");
        seqTokens[size_t(t.seq)].push_back(size_t(i));
        seqMaxPos[size_t(t.seq)] = std::max(seqMaxPos[size_t(t.seq)], t.pos);
    }
    for (size_t s = 0; s < nSeq; ++s)
        for (int32_t p = 0; p <= seqMaxPos[s]; ++p)
            if (kv.slotOf(batch.blockTables[s], p) < 0)
                return invalidArgument("position " + std::to_string(p) + " of a sequence has no KV slot");

    // Activations, row-major per token: xn [n][E]; q, att [n][qDim]; k, v [n][kvDim];
    // tmp [n][E]; gate, up [chunk][F]: the feed-forward runs kFfnChunk tokens at a time, so its
    // activations, the largest, stay small on long prompts (the weights are read once per chunk).
    constexpr int64_t kFfnChunk = 256;
    std::vector<float>&xn = refill(S.xn, n * E), &q = refill(S.q, n * qDim),
                      &att = refill(S.att, n * qDim), &k = refill(S.k, n * kvDim),
                      &v = refill(S.v, n * kvDim), &gate = refill(S.gate, std::min(n, kFfnChunk) * F),
                      &up = refill(S.up, std::min(n, kFfnChunk) * F), &tmp = refill(S.tmp, n * E);
    // Attention work: each sequence's tokens (batch rows and positions) in runs of up to
    // kAttentionRun, times its KV heads.
    constexpr int64_t kAttentionRun = 32;
    std::vector<std::vector<int64_t>>& seqRows = emptied(S.seqRows, nSeq);
    std::vector<std::vector<int32_t>>& seqPositions = emptied(S.seqPositions, nSeq);
    std::vector<AttentionItem>& items = S.items;
    items.clear();
    for (size_t s = 0; s < nSeq; ++s) {
        for (size_t i : seqTokens[s]) {
            seqRows[s].push_back(int64_t(i));
            seqPositions[s].push_back(batch.tokens[i].pos);
        }
        const int64_t count = int64_t(seqRows[s].size());
        for (int64_t h = 0; h < hp.nHeadKv; ++h)
            for (int64_t first = 0; first < count; first += kAttentionRun)
                items.push_back({s, h, first, std::min(kAttentionRun, count - first)});
    }
    auto normRows = [&](const Vector& w) {
        parallel(pool, n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                cpu::rmsNorm(&x[size_t(i * E)], w.data, &xn[size_t(i * E)], E, hp.rmsEps);
        });
    };
    const float scale = 1.0f / std::sqrt(float(D));
    // Each token's RoPE angles [n][half][cos, sin], shared by all heads and layers.
    const int64_t nRot = std::min<int64_t>(hp.nRot, D), half = nRot / 2;
    std::vector<double>& ropeCs = refill(S.ropeCs, n * 2 * half);
    parallel(pool, n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            ropeAngles(batch.tokens[size_t(i)].pos, nRot, hp.ropeBase, m_ropeFreqs,
                       &ropeCs[size_t(i * 2 * half)]);
    });

    for (int l = firstLayer; l < hp.nLayer; ++l) {
        const LayerWeights& L = m_layers[size_t(l)];
        const int kvLayer = l - firstLayer;
        normRows(L.attnNorm);
        cpu::prefetchCallerChunk(one(L.wo), n, pool);
        HEARTH_RETURN_IF_ERROR(
            cpu::matMulShared(qkvOf(L, q.data(), k.data(), v.data()), xn.data(), n, pool));
        cpu::prefetchWorkerChunk(one(L.wo), n, pool);
        addBiasRows(q.data(), n, qDim, L.bq);
        addBiasRows(k.data(), n, kvDim, L.bk);
        addBiasRows(v.data(), n, kvDim, L.bv);
        // Q/K norm and RoPE per token, then K/V into the cache at each token's slot.
        parallel(pool, n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const BatchToken& t = batch.tokens[size_t(i)];
                for (int h = 0; h < hp.nHead; ++h) {
                    float* qh = &q[size_t(i * qDim + h * D)];
                    if (L.qNorm) cpu::rmsNorm(qh, L.qNorm->data, qh, D, hp.rmsEps);
                    ropeApply(qh, half, hp.neoxRope, &ropeCs[size_t(i * 2 * half)]);
                }
                for (int h = 0; h < hp.nHeadKv; ++h) {
                    float* kh = &k[size_t(i * kvDim + h * D)];
                    if (L.kNorm) cpu::rmsNorm(kh, L.kNorm->data, kh, D, hp.rmsEps);
                    ropeApply(kh, half, hp.neoxRope, &ropeCs[size_t(i * 2 * half)]);
                }
                const int64_t slot = kv.slotOf(batch.blockTables[size_t(t.seq)], t.pos);
                kv.writeKey(kvLayer, slot, &k[size_t(i * kvDim)]);
                kv.writeValue(kvLayer, slot, &v[size_t(i * kvDim)]);
            }
        });
        // Attention straight from the paged cache, one work item per (sequence, KV head, run of
        // its tokens); each folds the sequence's history block by block.
        cpu::prefetchCallerChunk(one(L.wo), n, pool);
        cpu::prefetchWorkerChunk(one(L.wo), n, pool); // again: the worker's wait after its part
        std::atomic<bool> attentionFailed{false};
        parallel(pool, int64_t(items.size()), [&](int64_t b, int64_t e) {
            for (int64_t w = b; w < e; ++w) {
                const AttentionItem& it = items[size_t(w)];
                cpu::PagedAttentionCall call;
                call.kv = &kv;
                call.layer = kvLayer;
                call.blockTable = batch.blockTables[it.seq];
                call.kvHead = it.kvHead;
                call.group = group;
                call.headDim = D;
                call.scale = scale;
                call.q = q.data();
                call.out = att.data();
                call.rowStride = qDim;
                call.rows = seqRows[it.seq].data() + it.first;
                call.positions = seqPositions[it.seq].data() + it.first;
                call.nTokens = it.count;
                if (!cpu::pagedAttention(call).isOk()) attentionFailed = true;
            }
        });
        if (attentionFailed) return internalError("attention: a position outside its sequence's blocks");
        cpu::prefetchCallerChunk(gateUpOf(L, gate.data(), up.data()), n, pool);
        HEARTH_RETURN_IF_ERROR(matMul(L.wo, att.data(), n, tmp.data()));
        cpu::prefetchWorkerChunk(gateUpOf(L, gate.data(), up.data()), n, pool);
        for (int64_t j = 0; j < n * E; ++j) x[size_t(j)] += tmp[size_t(j)];
        normRows(L.ffnNorm);
        for (int64_t c0 = 0; c0 < n; c0 += kFfnChunk) {
            const int64_t c = std::min(kFfnChunk, n - c0);
            cpu::prefetchCallerChunk(one(L.wDown), n, pool);
            HEARTH_RETURN_IF_ERROR(
                cpu::matMulShared(gateUpOf(L, gate.data(), up.data()), &xn[size_t(c0 * E)], c, pool));
            cpu::prefetchWorkerChunk(one(L.wDown), n, pool);
            parallel(pool, c, [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i)
                    cpu::swiglu(&gate[size_t(i * F)], &up[size_t(i * F)], &gate[size_t(i * F)], F);
            });
            if (l + 1 < hp.nLayer) cpu::prefetchCallerChunk(nextQkv(l), n, pool);
            else cpu::prefetchCallerChunk(one(m_output), n, pool);
            HEARTH_RETURN_IF_ERROR(matMul(L.wDown, gate.data(), c, &tmp[size_t(c0 * E)]));
        }
        if (l + 1 < hp.nLayer) cpu::prefetchWorkerChunk(nextQkv(l), n, pool);
        else cpu::prefetchWorkerChunk(one(m_output), n, pool);
        for (int64_t j = 0; j < n * E; ++j) x[size_t(j)] += tmp[size_t(j)];
    }

    // Logits for the tokens that want them: final norm, then the output matrix.
    std::vector<float>& wantedRows = S.wantedRows;
    wantedRows.clear();
    for (int64_t i = 0; i < n; ++i) {
        if (!batch.tokens[size_t(i)].wantLogits) continue;
        const size_t at = wantedRows.size();
        wantedRows.resize(at + size_t(E));
        cpu::rmsNorm(&x[size_t(i * E)], m_outputNorm.data, &wantedRows[at], E, hp.rmsEps);
    }
    const int64_t wanted = int64_t(wantedRows.size()) / E;
    logits.resize(size_t(wanted) * size_t(hp.nVocab)); // every value is written below
    if (wanted > 0)
        HEARTH_RETURN_IF_ERROR(matMul(m_output, wantedRows.data(), wanted, logits.data()));
    return Status::ok();
}

} // namespace hearth::model
