// The llama-family forward pass on the optimized CPU kernels: every linear layer is one batched,
// multithreaded matMul over all tokens of the step (each weight row is decoded once per step,
// which is where continuous batching pays), and attention runs in parallel over (token, head).
// The reference forward in llama_model.cpp is its oracle.
#include "model/llama_model.h"

#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <cmath>

namespace hearth::model {

namespace {

void addBiasRows(float* x, int64_t n, int64_t dim, const std::optional<Vector>& b) {
    if (!b) return;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t d = 0; d < dim; ++d) x[i * dim + d] += b->data[d];
}

void parallel(cpu::ThreadPool* pool, int64_t n, const auto& fn) {
    if (pool) pool->parallelFor(n, fn);
    else fn(int64_t(0), n);
}

} // namespace

Status LlamaModel::forwardCpu(const Batch& batch, cpu::PagedKvStore& kv, std::vector<float>& logits,
                              cpu::ThreadPool* pool) const {
    const LlamaHParams& hp = m_hp;
    const int64_t n = int64_t(batch.tokens.size());
    const int64_t E = hp.nEmbd, D = hp.headDim, F = hp.nFf, qDim = int64_t(hp.nHead) * D,
                  kvDim = int64_t(hp.nHeadKv) * D, group = hp.nHead / hp.nHeadKv;
    if (kv.rowSize() != kvDim) return invalidArgument("KV store shape does not match the model");
    const size_t nSeq = batch.blockTables.size();
    std::vector<std::vector<size_t>> seqTokens(nSeq);
    std::vector<int32_t> seqMaxPos(nSeq, -1);
    for (int64_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[size_t(i)];
        if (t.token < 0 || t.token >= hp.nVocab)
            return outOfRange("token id " + std::to_string(t.token) + " outside the vocabulary");
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

    // Activations, row-major per token: x, xn [n][E]; q, att [n][qDim]; k, v [n][kvDim];
    // gate, up [n][F]; tmp [n][E].
    auto buffer = [](int64_t count) { return std::vector<float>(static_cast<size_t>(count)); };
    std::vector<float> x = buffer(n * E), xn = buffer(n * E), q = buffer(n * qDim),
                       att = buffer(n * qDim), k = buffer(n * kvDim), v = buffer(n * kvDim),
                       gate = buffer(n * F), up = buffer(n * F), tmp = buffer(n * E);
    std::vector<std::vector<float>> kHist(nSeq), vHist(nSeq);
    for (int64_t i = 0; i < n; ++i)
        HEARTH_RETURN_IF_ERROR(cpu::ref::getRow(m_tokEmbd, batch.tokens[size_t(i)].token, &x[size_t(i * E)]));

    auto normRows = [&](const Vector& w) {
        parallel(pool, n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                cpu::ref::rmsNorm(&x[size_t(i * E)], w.data, &xn[size_t(i * E)], E, hp.rmsEps);
        });
    };
    const float scale = 1.0f / std::sqrt(float(D));

    for (int l = 0; l < hp.nLayer; ++l) {
        const LayerWeights& L = m_layers[size_t(l)];
        normRows(L.attnNorm);
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wq, xn.data(), n, q.data(), pool));
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wk, xn.data(), n, k.data(), pool));
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wv, xn.data(), n, v.data(), pool));
        addBiasRows(q.data(), n, qDim, L.bq);
        addBiasRows(k.data(), n, kvDim, L.bk);
        addBiasRows(v.data(), n, kvDim, L.bv);
        // Q/K norm and RoPE per token, then K/V into the cache at each token's slot.
        parallel(pool, n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const BatchToken& t = batch.tokens[size_t(i)];
                for (int h = 0; h < hp.nHead; ++h) {
                    float* qh = &q[size_t(i * qDim + h * D)];
                    if (L.qNorm) cpu::ref::rmsNorm(qh, L.qNorm->data, qh, D, hp.rmsEps);
                    cpu::ref::rope(qh, D, hp.nRot, t.pos, hp.ropeBase, hp.neoxRope, m_ropeFreqs);
                }
                for (int h = 0; h < hp.nHeadKv; ++h) {
                    float* kh = &k[size_t(i * kvDim + h * D)];
                    if (L.kNorm) cpu::ref::rmsNorm(kh, L.kNorm->data, kh, D, hp.rmsEps);
                    cpu::ref::rope(kh, D, hp.nRot, t.pos, hp.ropeBase, hp.neoxRope, m_ropeFreqs);
                }
                const int64_t slot = kv.slotOf(batch.blockTables[size_t(t.seq)], t.pos);
                kv.writeKey(l, slot, &k[size_t(i * kvDim)]);
                kv.writeValue(l, slot, &v[size_t(i * kvDim)]);
            }
        });
        // Each sequence's history [0, maxPos] as floats, read once per layer: K transposed
        // (kHist[s]: [kvDim][hist], positions contiguous), V as rows (vHist[s]: [hist][kvDim]).
        parallel(pool, int64_t(nSeq), [&](int64_t b, int64_t e) {
            std::vector<float> row(static_cast<size_t>(kvDim));
            for (int64_t s = b; s < e; ++s) {
                const size_t hist = size_t(seqMaxPos[size_t(s)] + 1);
                kHist[size_t(s)].resize(hist * size_t(kvDim));
                vHist[size_t(s)].resize(hist * size_t(kvDim));
                for (size_t p = 0; p < hist; ++p) {
                    const int64_t slot = kv.slotOf(batch.blockTables[size_t(s)], int64_t(p));
                    kv.readKey(l, slot, row.data());
                    for (int64_t c = 0; c < kvDim; ++c) kHist[size_t(s)][size_t(c) * hist + p] = row[size_t(c)];
                    kv.readValue(l, slot, &vHist[size_t(s)][p * size_t(kvDim)]);
                }
            }
        });
        // Attention, one (token, head) per work item.
        parallel(pool, n * hp.nHead, [&](int64_t b, int64_t e) {
            std::vector<float> scores;
            for (int64_t item = b; item < e; ++item) {
                const int64_t i = item / hp.nHead, h = item % hp.nHead;
                const BatchToken& t = batch.tokens[size_t(i)];
                const int64_t hist = seqMaxPos[size_t(t.seq)] + 1, len = int64_t(t.pos) + 1;
                scores.resize(size_t(len));
                cpu::attendHead(&q[size_t(i * qDim + h * D)],
                                kHist[size_t(t.seq)].data() + (h / group) * D * hist, hist,
                                vHist[size_t(t.seq)].data() + (h / group) * D, kvDim, len, D, scale,
                                scores.data(), &att[size_t(i * qDim + h * D)]);
            }
        });
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wo, att.data(), n, tmp.data(), pool));
        for (int64_t j = 0; j < n * E; ++j) x[size_t(j)] += tmp[size_t(j)];
        normRows(L.ffnNorm);
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wGate, xn.data(), n, gate.data(), pool));
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wUp, xn.data(), n, up.data(), pool));
        parallel(pool, n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                cpu::ref::swiglu(&gate[size_t(i * F)], &up[size_t(i * F)], &gate[size_t(i * F)], F);
        });
        HEARTH_RETURN_IF_ERROR(cpu::matMul(L.wDown, gate.data(), n, tmp.data(), pool));
        for (int64_t j = 0; j < n * E; ++j) x[size_t(j)] += tmp[size_t(j)];
    }

    // Logits for the tokens that want them: final norm, then the output matrix.
    std::vector<float> wantedRows;
    for (int64_t i = 0; i < n; ++i) {
        if (!batch.tokens[size_t(i)].wantLogits) continue;
        const size_t at = wantedRows.size();
        wantedRows.resize(at + size_t(E));
        cpu::ref::rmsNorm(&x[size_t(i * E)], m_outputNorm.data, &wantedRows[at], E, hp.rmsEps);
    }
    const int64_t wanted = int64_t(wantedRows.size()) / E;
    logits.assign(size_t(wanted) * size_t(hp.nVocab), 0.0f);
    if (wanted > 0)
        HEARTH_RETURN_IF_ERROR(cpu::matMul(m_output, wantedRows.data(), wanted, logits.data(), pool));
    return Status::ok();
}

} // namespace hearth::model
