// Llama-family loading and the fp32 reference forward pass: obviously right, not fast. Every
// faster path (SIMD, Vulkan, CUDA) is checked against this one.
#include "model/llama_model.h"

#include <algorithm>
#include <cmath>

namespace hearth::model {

using cpu::ref::Matrix;

namespace {

Result<int> getInt(const gguf::File& f, const std::string& key, std::optional<int> fallback = {}) {
    if (!f.has(key)) {
        if (fallback) return *fallback;
        return notFound("missing key '" + key + "'");
    }
    HEARTH_ASSIGN_OR_RETURN(uint32_t v, f.getU32(key));
    if (v > (1u << 30)) return outOfRange("key '" + key + "' is implausibly large");
    return int(v);
}

Result<Matrix> bindMatrix(const gguf::File& f, const std::string& name, int64_t cols, int64_t rows) {
    const gguf::TensorInfo* t = f.findTensor(name);
    if (!t) return notFound("missing tensor '" + name + "'");
    if (t->nDims != 2 || int64_t(t->ne[0]) != cols || int64_t(t->ne[1]) != rows)
        return invalidFormat("tensor '" + name + "' has shape " + t->shapeString() + ", expected [" +
                             std::to_string(cols) + ", " + std::to_string(rows) + "]");
    const quant::TypeInfo* info = quant::typeInfo(t->type);
    if (!info || !info->canDequantize)
        return unsupported("tensor '" + name + "' has type " + std::string(quant::typeName(t->type)) +
                           ", which this build cannot compute with");
    Matrix m;
    m.data = f.tensorData(*t);
    m.type = t->type;
    m.cols = cols;
    m.rows = rows;
    m.rowBytes = *quant::rowBytes(t->type, uint64_t(cols));
    if (!m.data) return invalidFormat("tensor '" + name + "' has no data");
    return m;
}

// Vectors are copied out of the file: they are tiny, read every step, and lie between the big
// matrices, so reading one in place would keep the file's pages around it mapped (a whole 2 MiB
// when the page cache holds the file in huge pages) after the matrices' own pages were released.
Result<Vector> bindVector(const gguf::File& f, const std::string& name, int64_t n,
                          std::vector<std::vector<float>>& copies) {
    const gguf::TensorInfo* t = f.findTensor(name);
    if (!t) return notFound("missing tensor '" + name + "'");
    if (t->type != quant::Type::F32 || t->elements() != uint64_t(n))
        return invalidFormat("tensor '" + name + "' must be F32 with " + std::to_string(n) +
                             " elements (it is " + std::string(quant::typeName(t->type)) + " " +
                             t->shapeString() + ")");
    const uint8_t* p = f.tensorData(*t);
    if (!p) return invalidFormat("tensor '" + name + "' has no data");
    if (reinterpret_cast<uintptr_t>(p) % alignof(float) != 0)
        return invalidFormat("tensor '" + name + "' is not aligned");
    const float* values = reinterpret_cast<const float*>(p);
    copies.emplace_back(values, values + n);
    return Vector{copies.back().data(), n};
}

void addBias(float* x, const std::optional<Vector>& b) {
    if (!b) return;
    for (int64_t i = 0; i < b->n; ++i) x[i] += b->data[i];
}

} // namespace

Result<LlamaHParams> readLlamaHParams(const gguf::File& f) {
    LlamaHParams hp;
    HEARTH_ASSIGN_OR_RETURN(hp.archName, f.getString("general.architecture"));
    if (hp.archName == "llama") hp.arch = Arch::Llama;
    else if (hp.archName == "qwen2") hp.arch = Arch::Qwen2;
    else if (hp.archName == "qwen3") hp.arch = Arch::Qwen3;
    else return unsupported("architecture '" + hp.archName + "' is not supported");
    const std::string a = hp.archName + ".";
    HEARTH_ASSIGN_OR_RETURN(hp.nLayer, getInt(f, a + "block_count"));
    HEARTH_ASSIGN_OR_RETURN(hp.nEmbd, getInt(f, a + "embedding_length"));
    HEARTH_ASSIGN_OR_RETURN(hp.nFf, getInt(f, a + "feed_forward_length"));
    HEARTH_ASSIGN_OR_RETURN(hp.nHead, getInt(f, a + "attention.head_count"));
    HEARTH_ASSIGN_OR_RETURN(hp.nHeadKv, getInt(f, a + "attention.head_count_kv", hp.nHead));
    HEARTH_ASSIGN_OR_RETURN(hp.nCtxTrain, getInt(f, a + "context_length", 2048));
    if (hp.nLayer < 1 || hp.nLayer > 4096) return invalidFormat("block_count must be 1..4096");
    if (hp.nEmbd < 1 || hp.nFf < 1) return invalidFormat("embedding/feed-forward length is zero");
    if (hp.nHead < 1 || hp.nHeadKv < 1 || hp.nHead % hp.nHeadKv != 0)
        return invalidFormat("head_count " + std::to_string(hp.nHead) +
                             " is not a positive multiple of head_count_kv " +
                             std::to_string(hp.nHeadKv));
    const int defaultHeadDim = hp.nEmbd / hp.nHead;
    HEARTH_ASSIGN_OR_RETURN(hp.headDim, getInt(f, a + "attention.key_length", defaultHeadDim));
    HEARTH_ASSIGN_OR_RETURN(int valueLength, getInt(f, a + "attention.value_length", hp.headDim));
    if (hp.headDim < 2 || hp.headDim % 2 != 0 || valueLength != hp.headDim)
        return unsupported("head dimension " + std::to_string(hp.headDim) + " / value length " +
                           std::to_string(valueLength) + " is not supported");
    HEARTH_ASSIGN_OR_RETURN(hp.nRot, getInt(f, a + "rope.dimension_count", hp.headDim));
    if (hp.nRot < 2 || hp.nRot > hp.headDim || hp.nRot % 2 != 0)
        return invalidFormat("rope.dimension_count " + std::to_string(hp.nRot) + " is invalid");
    if (f.has(a + "rope.freq_base")) {
        HEARTH_ASSIGN_OR_RETURN(hp.ropeBase, f.getF32(a + "rope.freq_base"));
    }
    if (f.has(a + "attention.layer_norm_rms_epsilon")) {
        HEARTH_ASSIGN_OR_RETURN(hp.rmsEps, f.getF32(a + "attention.layer_norm_rms_epsilon"));
    }
    if (!(hp.ropeBase > 0.0f) || !(hp.rmsEps > 0.0f))
        return invalidFormat("rope.freq_base and layer_norm_rms_epsilon must be positive");
    hp.neoxRope = hp.arch != Arch::Llama;
    const gguf::TensorInfo* emb = f.findTensor("token_embd.weight");
    if (!emb) return notFound("missing tensor 'token_embd.weight'");
    if (emb->nDims != 2) return invalidFormat("token_embd.weight must be 2-D");
    hp.nVocab = int(emb->ne[1]);
    return hp;
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(const gguf::File& f) {
    auto m = std::unique_ptr<LlamaModel>(new LlamaModel());
    HEARTH_ASSIGN_OR_RETURN(m->m_hp, readLlamaHParams(f));
    const LlamaHParams& hp = m->m_hp;
    const int64_t qDim = int64_t(hp.nHead) * hp.headDim, kvDim = int64_t(hp.nHeadKv) * hp.headDim;
    HEARTH_ASSIGN_OR_RETURN(m->m_tokEmbd, bindMatrix(f, "token_embd.weight", hp.nEmbd, hp.nVocab));
    m->m_reader = f.dataReader();
    if (f.findTensor("output.weight")) {
        HEARTH_ASSIGN_OR_RETURN(m->m_output, bindMatrix(f, "output.weight", hp.nEmbd, hp.nVocab));
    } else {
        m->m_output = m->m_tokEmbd; // tied embeddings
    }
    auto vectorWeight = [&](const std::string& name, int64_t n) { return bindVector(f, name, n, m->m_vectorCopies); };
    HEARTH_ASSIGN_OR_RETURN(m->m_outputNorm, vectorWeight("output_norm.weight", hp.nEmbd));
    if (f.findTensor("rope_freqs.weight")) {
        HEARTH_ASSIGN_OR_RETURN(Vector rf, vectorWeight("rope_freqs.weight", hp.nRot / 2));
        m->m_ropeFreqs.assign(rf.data, rf.data + rf.n);
    }
    m->m_layers.resize(size_t(hp.nLayer));
    for (int i = 0; i < hp.nLayer; ++i) {
        LayerWeights& L = m->m_layers[size_t(i)];
        const std::string p = "blk." + std::to_string(i) + ".";
        HEARTH_ASSIGN_OR_RETURN(L.attnNorm, vectorWeight(p + "attn_norm.weight", hp.nEmbd));
        HEARTH_ASSIGN_OR_RETURN(L.ffnNorm, vectorWeight(p + "ffn_norm.weight", hp.nEmbd));
        HEARTH_ASSIGN_OR_RETURN(L.wq, bindMatrix(f, p + "attn_q.weight", hp.nEmbd, qDim));
        HEARTH_ASSIGN_OR_RETURN(L.wk, bindMatrix(f, p + "attn_k.weight", hp.nEmbd, kvDim));
        HEARTH_ASSIGN_OR_RETURN(L.wv, bindMatrix(f, p + "attn_v.weight", hp.nEmbd, kvDim));
        HEARTH_ASSIGN_OR_RETURN(L.wo, bindMatrix(f, p + "attn_output.weight", qDim, hp.nEmbd));
        HEARTH_ASSIGN_OR_RETURN(L.wGate, bindMatrix(f, p + "ffn_gate.weight", hp.nEmbd, hp.nFf));
        HEARTH_ASSIGN_OR_RETURN(L.wUp, bindMatrix(f, p + "ffn_up.weight", hp.nEmbd, hp.nFf));
        HEARTH_ASSIGN_OR_RETURN(L.wDown, bindMatrix(f, p + "ffn_down.weight", hp.nFf, hp.nEmbd));
        if (f.findTensor(p + "attn_q.bias")) {
            HEARTH_ASSIGN_OR_RETURN(L.bq, vectorWeight(p + "attn_q.bias", qDim));
            HEARTH_ASSIGN_OR_RETURN(L.bk, vectorWeight(p + "attn_k.bias", kvDim));
            HEARTH_ASSIGN_OR_RETURN(L.bv, vectorWeight(p + "attn_v.bias", kvDim));
        } else if (hp.arch == Arch::Qwen2) {
            return notFound("qwen2 model without tensor '" + p + "attn_q.bias'");
        }
        if (hp.arch == Arch::Qwen3) {
            HEARTH_ASSIGN_OR_RETURN(L.qNorm, vectorWeight(p + "attn_q_norm.weight", hp.headDim));
            HEARTH_ASSIGN_OR_RETURN(L.kNorm, vectorWeight(p + "attn_k_norm.weight", hp.headDim));
        }
    }
    return m;
}

Status LlamaModel::forward(const Batch& batch, cpu::PagedKvStore& kv,
                           std::vector<float>& logits) const {
    const LlamaHParams& hp = m_hp;
    const size_t n = batch.tokens.size();
    const int64_t E = hp.nEmbd, D = hp.headDim, qDim = int64_t(hp.nHead) * D,
                  kvDim = int64_t(hp.nHeadKv) * D, group = hp.nHead / hp.nHeadKv;
    if (kv.rowSize() != kvDim) return invalidArgument("KV store shape does not match the model");
    for (const BatchToken& t : batch.tokens) {
        if (t.token < 0 || t.token >= hp.nVocab)
            return outOfRange("token id " + std::to_string(t.token) + " outside the vocabulary");
        if (t.seq < 0 || size_t(t.seq) >= batch.blockTables.size())
            return invalidArgument("batch token names an unknown sequence");
        if (kv.slotOf(batch.blockTables[size_t(t.seq)], t.pos) < 0)
            return invalidArgument("position " + std::to_string(t.pos) + " has no KV slot");
    }

    // x: [n][E] residual stream; q: [n][qDim]; att: [n][qDim] attention output; scratch per token.
    auto buffer = [](int64_t count) { return std::vector<float>(static_cast<size_t>(count)); };
    std::vector<float> x = buffer(int64_t(n) * E), xn = buffer(E), q = buffer(int64_t(n) * qDim),
                       att = buffer(int64_t(n) * qDim), kRow = buffer(kvDim), vRow = buffer(kvDim),
                       tmp = buffer(E), gate = buffer(hp.nFf), up = buffer(hp.nFf), scores, kHist,
                       vHist;
    for (size_t i = 0; i < n; ++i)
        HEARTH_RETURN_IF_ERROR(cpu::ref::getRow(m_tokEmbd, batch.tokens[i].token, &x[i * size_t(E)]));

    // The tokens of each sequence, and the furthest position each one reaches in this batch.
    std::vector<std::vector<size_t>> seqTokens(batch.blockTables.size());
    std::vector<int32_t> seqMaxPos(batch.blockTables.size(), -1);
    for (size_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[i];
        seqTokens[size_t(t.seq)].push_back(i);
        seqMaxPos[size_t(t.seq)] = std::max(seqMaxPos[size_t(t.seq)], t.pos);
    }
    for (size_t s = 0; s < seqTokens.size(); ++s)
        for (int32_t p = 0; p <= seqMaxPos[s]; ++p)
            if (kv.slotOf(batch.blockTables[s], p) < 0)
                return invalidArgument("position " + std::to_string(p) + " of a sequence has no KV slot");

    for (int l = 0; l < hp.nLayer; ++l) {
        const LayerWeights& L = m_layers[size_t(l)];
        // 1. Q for every token; K and V stored in the cache at the token's slot.
        for (size_t i = 0; i < n; ++i) {
            const BatchToken& t = batch.tokens[i];
            float* xi = &x[i * size_t(E)];
            float* qi = &q[i * size_t(qDim)];
            cpu::ref::rmsNorm(xi, L.attnNorm.data, xn.data(), E, hp.rmsEps);
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wq, xn.data(), qi));
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wk, xn.data(), kRow.data()));
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wv, xn.data(), vRow.data()));
            addBias(qi, L.bq);
            addBias(kRow.data(), L.bk);
            addBias(vRow.data(), L.bv);
            for (int h = 0; h < hp.nHead; ++h) {
                float* qh = qi + h * D;
                if (L.qNorm) cpu::ref::rmsNorm(qh, L.qNorm->data, qh, D, hp.rmsEps);
                cpu::ref::rope(qh, D, hp.nRot, t.pos, hp.ropeBase, hp.neoxRope, m_ropeFreqs);
            }
            for (int h = 0; h < hp.nHeadKv; ++h) {
                float* kh = kRow.data() + h * D;
                if (L.kNorm) cpu::ref::rmsNorm(kh, L.kNorm->data, kh, D, hp.rmsEps);
                cpu::ref::rope(kh, D, hp.nRot, t.pos, hp.ropeBase, hp.neoxRope, m_ropeFreqs);
            }
            const int64_t slot = kv.slotOf(batch.blockTables[size_t(t.seq)], t.pos);
            kv.writeKey(l, slot, kRow.data());
            kv.writeValue(l, slot, vRow.data());
        }
        // 2. Attention: each sequence's history [0, maxPos] is read from the cache once (as
        //    stored, so F16/Q8_0 rounding applies to this batch's tokens too), then every token
        //    of the sequence attends causally over positions [0, pos].
        const float scale = 1.0f / std::sqrt(float(D));
        for (size_t s = 0; s < seqTokens.size(); ++s) {
            if (seqTokens[s].empty()) continue;
            const auto table = batch.blockTables[s];
            const size_t hist = size_t(seqMaxPos[s]) + 1;
            kHist.resize(hist * size_t(kvDim));
            vHist.resize(hist * size_t(kvDim));
            for (size_t p = 0; p < hist; ++p) {
                const int64_t slot = kv.slotOf(table, int64_t(p));
                kv.readKey(l, slot, &kHist[p * size_t(kvDim)]);
                kv.readValue(l, slot, &vHist[p * size_t(kvDim)]);
            }
            for (size_t i : seqTokens[s]) {
                const int32_t pos = batch.tokens[i].pos;
                const float* qi = &q[i * size_t(qDim)];
                scores.resize(size_t(pos) + 1);
                for (int h = 0; h < hp.nHead; ++h) {
                    const int kvh = h / int(group);
                    const float* qh = qi + h * D;
                    for (int32_t p = 0; p <= pos; ++p) {
                        const float* kp = &kHist[size_t(p) * size_t(kvDim) + size_t(kvh * D)];
                        double dot = 0.0;
                        for (int64_t d = 0; d < D; ++d) dot += double(qh[d]) * double(kp[d]);
                        scores[size_t(p)] = float(dot) * scale;
                    }
                    cpu::ref::softmax(scores.data(), int64_t(scores.size()));
                    float* out = &att[i * size_t(qDim) + size_t(h * D)];
                    std::fill(out, out + D, 0.0f);
                    for (int32_t p = 0; p <= pos; ++p) {
                        const float* vp = &vHist[size_t(p) * size_t(kvDim) + size_t(kvh * D)];
                        for (int64_t d = 0; d < D; ++d) out[d] += scores[size_t(p)] * vp[d];
                    }
                }
            }
        }
        // 3. Output projection and the SwiGLU feed-forward, per token.
        for (size_t i = 0; i < n; ++i) {
            float* xi = &x[i * size_t(E)];
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wo, &att[i * size_t(qDim)], tmp.data()));
            for (int64_t e = 0; e < E; ++e) xi[e] += tmp[size_t(e)];
            cpu::ref::rmsNorm(xi, L.ffnNorm.data, xn.data(), E, hp.rmsEps);
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wGate, xn.data(), gate.data()));
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wUp, xn.data(), up.data()));
            cpu::ref::swiglu(gate.data(), up.data(), gate.data(), hp.nFf);
            HEARTH_RETURN_IF_ERROR(cpu::ref::matVec(L.wDown, gate.data(), tmp.data()));
            for (int64_t e = 0; e < E; ++e) xi[e] += tmp[size_t(e)];
        }
    }

    size_t wanted = 0;
    for (const BatchToken& t : batch.tokens) wanted += t.wantLogits ? 1 : 0;
    logits.assign(wanted * size_t(hp.nVocab), 0.0f);
    size_t row = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!batch.tokens[i].wantLogits) continue;
        cpu::ref::rmsNorm(&x[i * size_t(E)], m_outputNorm.data, xn.data(), E, hp.rmsEps);
        HEARTH_RETURN_IF_ERROR(
            cpu::ref::matVec(m_output, xn.data(), &logits[row * size_t(hp.nVocab)]));
        ++row;
    }
    return Status::ok();
}

} // namespace hearth::model
