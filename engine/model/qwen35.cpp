// Qwen3.5 (qwen35: 0.8B-27B dense; qwen35moe: 35B-A3B and larger with experts): a hybrid decoder.
// Three of every four layers (per attention.recurrent_layers, else all but each
// full_attention_interval-th) are linear attention: a gated delta net whose q/k/v pass a short
// causal convolution, with a recurrent state per sequence (the convolution window and one
// [S][S] matrix per value head) instead of K/V. The others are full attention with per-head q/k
// norms, partial NeoX RoPE (interleaved M-RoPE sections; text positions make it plain RoPE but
// for dims of the fourth section, which stay unrotated) and an output gated by sigmoid of a
// second half of q's projection. Every layer: x += mixer(norm(x)); x += ffn(post_norm(x)), the
// ffn SwiGLU, or (qwen35moe) softmax-routed experts plus a sigmoid-gated shared expert.
// Multi-token-prediction layers after block_count - nextn_predict_layers are checked and left
// out of plain decoding; the first is also a model of its own (loadQwen35Mtp), the draft head of
// speculative decoding. As llama.cpp reads these files (src/models/qwen35.cpp, qwen35moe.cpp).
#include "model/architectures.h"
#include "model/binding.h"
#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace hearth::model {

namespace {

struct SsmHParams {
    int convKernel = 0; // K
    int headSize = 0;   // S (ssm.state_size): q/k/v head size
    int nHeadV = 0;     // Hv (ssm.time_step_rank)
    int nHeadK = 0;     // Hk (ssm.group_count)
    int64_t channels() const { return int64_t(2 * nHeadK + nHeadV) * headSize; }
};

// The frequency factors of rope.dimension_sections (sectionFactors).
struct RopeSections {
    int32_t text = -1;
    int32_t mrope[3] = {-1, -1, -1};
};

struct Layer {
    bool recurrent = false;
    int32_t attnNorm = -1, postNorm = -1;
    // Linear attention.
    int32_t qkv = -1, z = -1, conv = -1, dtBias = -1, a = -1, beta = -1, alpha = -1, ssmNorm = -1, ssmOut = -1;
    // Full attention.
    AttentionWeights attn;
    // Feed-forward: dense, or experts with a shared expert.
    int32_t gate = -1, up = -1, down = -1;
    MoeWeights experts;
    int32_t sharedGateInp = -1, sharedGate = -1, sharedUp = -1, sharedDown = -1;
};

class Qwen35 final : public Architecture {
public:
    // mtp: the file's first multi-token-prediction layer alone (loadQwen35Mtp), not the trunk,
    // its logits over the first `shortlist` ids when that is fewer than the vocabulary.
    Qwen35(bool moe, bool mtp, int shortlist) : m_moeArch(moe), m_mtp(mtp), m_shortlist(shortlist) {}

    Status bind(const gguf::File& f) {
        const std::string arch = m_moeArch ? "qwen35moe" : "qwen35";
        Binder b(f, arch, m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(DecoderHParams hp, readDecoderHParams(b, !m_moeArch));
        HEARTH_ASSIGN_OR_RETURN(const int nextn, b.integer("nextn_predict_layers", 0));
        if (nextn < 0 || nextn >= hp.nLayer)
            return invalidFormat(arch + ".nextn_predict_layers " + std::to_string(nextn) + " leaves no layer of " +
                                 std::to_string(hp.nLayer));
        const int nAll = hp.nLayer;
        hp.nLayer = nAll - nextn;
        m_hp = hp;
        HEARTH_RETURN_IF_ERROR(readSsm(b));
        HEARTH_ASSIGN_OR_RETURN(const std::vector<bool> recurrent, readRecurrentLayers(b, nAll, hp.nLayer));
        if (m_moeArch) {
            HEARTH_ASSIGN_OR_RETURN(m_moe, readMoeHParams(b, hp.nFf));
            HEARTH_ASSIGN_OR_RETURN(m_nFfShared, b.integer("expert_shared_feed_forward_length", hp.nFf));
            if (m_nFfShared < 1) return invalidFormat(arch + ".expert_shared_feed_forward_length must be positive");
        }

        m_spec = attentionSpec(hp);
        m_spec.rope.neox = true;
        m_spec.qGate = true;
        m_spec.normEps = hp.normEps;
        HEARTH_ASSIGN_OR_RETURN(m_spec.rope, readRopeScaling(b, hp, m_spec.rope));
        HEARTH_ASSIGN_OR_RETURN(const RopeSections ropeFactors, sectionFactors(b, hp.nRot));
        m_mrope = ropeFactors.mrope[0] >= 0;

        if (m_mtp) return bindMtp(b, ropeFactors, nextn);
        const int64_t E = hp.nEmbd, nVocab = hp.nVocab;
        const int64_t C = m_ssm.channels(), V = int64_t(m_ssm.nHeadV) * m_ssm.headSize, K = m_ssm.convKernel;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, hp.nLayer));
        m_output = m_tokenEmbedding;
        if (b.hasTensor("output.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, nVocab, hp.nLayer));
        }
        m_dims = decoderDims(arch, hp);
        // Images (a qwen3vl_merger projector's embeddings) with M-RoPE positions, seen causally.
        m_dims.givenEmbeddings = m_mrope;
        m_dims.mrope = m_mrope;
        m_dims.state.assign(size_t(hp.nLayer), LayerState{});
        m_layers.resize(size_t(hp.nLayer));
        for (int l = 0; l < hp.nLayer; ++l) {
            Layer& Y = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            Y.recurrent = recurrent[size_t(l)];
            // A layer list that disagrees with the tensors: say so rather than name a shape.
            const std::string other = p + (Y.recurrent ? "attn_output.weight" : "ssm_conv1d.weight");
            if (b.hasTensor(other))
                return invalidFormat("layer " + std::to_string(l) + " is " +
                                     (Y.recurrent ? "a gated delta net" : "full attention") + " by " + arch +
                                     ".attention.recurrent_layers / full_attention_interval, but holds '" + other + "'");
            HEARTH_ASSIGN_OR_RETURN(Y.attnNorm, b.vector(p + "attn_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(Y.postNorm, b.vector(p + "post_attention_norm.weight", E, l));
            if (Y.recurrent) {
                m_dims.kv[size_t(l)] = LayerKv{0, 0, 0};
                m_dims.state[size_t(l)] = LayerState{(K - 1) * C, int64_t(m_ssm.nHeadV) * m_ssm.headSize * m_ssm.headSize};
                const int64_t Hv = m_ssm.nHeadV;
                HEARTH_ASSIGN_OR_RETURN(Y.qkv, b.matrix(p + "attn_qkv.weight", E, C, l));
                HEARTH_ASSIGN_OR_RETURN(Y.z, b.matrix(p + "attn_gate.weight", E, V, l));
                HEARTH_ASSIGN_OR_RETURN(Y.conv, b.f32Matrix(p + "ssm_conv1d.weight", K, C, l));
                HEARTH_ASSIGN_OR_RETURN(Y.dtBias, b.vector(p + "ssm_dt.bias", Hv, l));
                HEARTH_ASSIGN_OR_RETURN(Y.a, b.vector(p + "ssm_a", Hv, l));
                HEARTH_ASSIGN_OR_RETURN(Y.beta, b.matrix(p + "ssm_beta.weight", E, Hv, l));
                HEARTH_ASSIGN_OR_RETURN(Y.alpha, b.matrix(p + "ssm_alpha.weight", E, Hv, l));
                HEARTH_ASSIGN_OR_RETURN(Y.ssmNorm, b.vector(p + "ssm_norm.weight", m_ssm.headSize, l));
                HEARTH_ASSIGN_OR_RETURN(Y.ssmOut, b.matrix(p + "ssm_out.weight", V, E, l));
            } else {
                HEARTH_RETURN_IF_ERROR(bindAttention(b, p, l, Y, ropeFactors));
            }
            HEARTH_RETURN_IF_ERROR(bindFeedForward(b, p, l, Y));
        }
        // The MTP layers: present and of the shapes the file says (the speculative decoder will
        // run them; plain decoding does not).
        for (int l = hp.nLayer; l < nAll; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            for (const auto& [name, ne0, ne1] : {std::tuple<std::string, int64_t, int64_t>{"nextn.eh_proj.weight", 2 * E, E},
                                                 {"nextn.enorm.weight", E, 1},
                                                 {"nextn.hnorm.weight", E, 1},
                                                 {"attn_norm.weight", E, 1}}) {
                const gguf::TensorInfo* t = f.findTensor(p + name);
                if (!t || int64_t(t->ne[0]) != ne0 || (t->nDims > 1 ? int64_t(t->ne[1]) : 1) != ne1)
                    return invalidFormat("multi-token-prediction layer " + std::to_string(l) + " lacks '" + p + name +
                                         "' of " + std::to_string(ne0) + " x " + std::to_string(ne1));
            }
        }
        m_nextn = nextn;
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        if (m_mtp) return buildMtp(g, shape, kv);
        StepTensors in = stepTensors(g, shape);
        if (m_mrope) {
            in.ropeT = g.input(graph::StepInput::RopeT, shape.tokens);
            if (shape.embeds > 0) { // an image's tokens: by (t, h, w) apart
                in.ropeH = g.input(graph::StepInput::RopeH, shape.tokens);
                in.ropeW = g.input(graph::StepInput::RopeW, shape.tokens);
            }
        }
        const graph::TensorId stateInfo = g.input(graph::StepInput::StateInfo, 3, shape.tokens);
        // [n][E]: an image's embeddings as they are in place of its tokens' rows.
        graph::TensorId x = withGivenEmbeddings(g, in, g.getRows(g.weight(m_tokenEmbedding), in.ids));
        for (int l = 0; l < m_hp.nLayer; ++l) {
            g.setLayer(l);
            const Layer& Y = m_layers[size_t(l)];
            const graph::TensorId h = g.rmsNorm(x, g.weight(Y.attnNorm), m_hp.normEps);
            const graph::TensorId mixed = Y.recurrent ? linearAttention(g, in, kv, stateInfo, l, h)
                                                      : selfAttention(g, in, kv, l, h, Y.attn, m_spec);
            x = g.add(x, mixed);
            x = g.add(x, feedForward(g, Y, g.rmsNorm(x, g.weight(Y.postNorm), m_hp.normEps)));
        }
        g.setLayer(m_hp.nLayer);
        logitsHead(g, in, x, m_outputNorm, m_output, m_hp.normEps);
    }

private:
    // The multi-token-prediction head (llama.cpp's graph_mtp): its layer blk.{n}, n the trunk's
    // layer count, is one full-attention layer with its own K/V, here the graph's layer 0.
    Status bindMtp(Binder& b, const RopeSections& ropeFactors, int nextn) {
        if (nextn < 1) return invalidArgument(b.arch() + " file has no multi-token-prediction layer (nextn_predict_layers 0)");
        const int64_t E = m_hp.nEmbd, nVocab = m_hp.nVocab;
        const std::string p = "blk." + std::to_string(m_hp.nLayer) + ".";
        Layer& Y = m_mtpLayer;
        HEARTH_ASSIGN_OR_RETURN(m_ehProj, b.matrix(p + "nextn.eh_proj.weight", 2 * E, E, 0));
        HEARTH_ASSIGN_OR_RETURN(m_enorm, b.vector(p + "nextn.enorm.weight", E, 0));
        HEARTH_ASSIGN_OR_RETURN(m_hnorm, b.vector(p + "nextn.hnorm.weight", E, 0));
        HEARTH_ASSIGN_OR_RETURN(Y.attnNorm, b.vector(p + "attn_norm.weight", E, 0));
        HEARTH_ASSIGN_OR_RETURN(Y.postNorm, b.vector(p + "post_attention_norm.weight", E, 0));
        HEARTH_RETURN_IF_ERROR(bindAttention(b, p, 0, Y, ropeFactors));
        HEARTH_RETURN_IF_ERROR(bindFeedForward(b, p, 0, Y));
        // Its own embeddings, head norm and head where the file has them, else the trunk's.
        const std::string embed = b.hasTensor(p + "nextn.embed_tokens.weight") ? p + "nextn.embed_tokens.weight"
                                                                                : std::string("token_embd.weight");
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix(embed, E, nVocab, -1));
        const std::string norm = b.hasTensor(p + "nextn.shared_head_norm.weight") ? p + "nextn.shared_head_norm.weight"
                                                                                   : std::string("output_norm.weight");
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector(norm, E, 1));
        // The output's first rows only for a shortlist (a multiple of 64 rows: whole row groups
        // of the CPU's repacked copies, whose first groups it then reads in place).
        const int64_t keep =
            m_shortlist > 0 ? std::min<int64_t>(nVocab, (int64_t(m_shortlist) + 63) / 64 * 64) : nVocab;
        const std::string out = b.hasTensor(p + "nextn.shared_head_head.weight") ? p + "nextn.shared_head_head.weight"
                                : b.hasTensor("output.weight")                     ? std::string("output.weight")
                                                                                   : std::string("token_embd.weight");
        if (keep < nVocab) {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrixRows(out, E, nVocab, keep, 1));
        } else if (out == embed) {
            m_output = m_tokenEmbedding;
        } else {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix(out, E, nVocab, 1));
        }
        DecoderHParams one = m_hp;
        one.nLayer = 1;
        m_dims = decoderDims(b.arch() + "-mtp", one);
        if (keep < nVocab) m_dims.nLogits = int(keep);
        return Status::ok();
    }

    // One step of the head: token x_p with the target's hidden row h_{p-1} (HiddenIn) at
    // position p gives the logits for position p + 1, and its own normed hidden row (what the
    // next draft position takes as h).
    void buildMtp(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const {
        const StepTensors in = stepTensors(g, shape);
        const int64_t E = m_hp.nEmbd, n = shape.tokens;
        const graph::TensorId h = g.input(graph::StepInput::HiddenIn, E, n, quant::Type::F32); // [n][E]
        g.setLayer(0);
        const graph::TensorId e = g.getRows(g.weight(m_tokenEmbedding), in.ids);                 // [n][E]
        const graph::TensorId both = g.concat(g.rmsNorm(e, g.weight(m_enorm), m_hp.normEps),
                                              g.rmsNorm(h, g.weight(m_hnorm), m_hp.normEps), 0); // [n][2E]
        graph::TensorId x = g.matMul(g.weight(m_ehProj), both);                                 // [n][E]
        const Layer& Y = m_mtpLayer;
        x = g.add(x, selfAttention(g, in, kv, 0, g.rmsNorm(x, g.weight(Y.attnNorm), m_hp.normEps), Y.attn, m_spec));
        x = g.add(x, feedForward(g, Y, g.rmsNorm(x, g.weight(Y.postNorm), m_hp.normEps)));
        g.setLayer(1);
        logitsHead(g, in, x, m_outputNorm, m_output, m_hp.normEps);
    }

    Status readSsm(const Binder& b) {
        HEARTH_ASSIGN_OR_RETURN(m_ssm.convKernel, b.integer("ssm.conv_kernel"));
        HEARTH_ASSIGN_OR_RETURN(const int inner, b.integer("ssm.inner_size"));
        HEARTH_ASSIGN_OR_RETURN(m_ssm.headSize, b.integer("ssm.state_size"));
        HEARTH_ASSIGN_OR_RETURN(m_ssm.nHeadV, b.integer("ssm.time_step_rank"));
        HEARTH_ASSIGN_OR_RETURN(m_ssm.nHeadK, b.integer("ssm.group_count"));
        const SsmHParams& s = m_ssm;
        const std::string sizes = "ssm sizes (conv_kernel " + std::to_string(s.convKernel) + ", inner_size " +
                                  std::to_string(inner) + ", state_size " + std::to_string(s.headSize) +
                                  ", time_step_rank " + std::to_string(s.nHeadV) + ", group_count " +
                                  std::to_string(s.nHeadK) + ")";
        if (s.convKernel < 2 || s.convKernel > 16 || s.headSize < 1 || s.headSize > 1024 || s.nHeadV < 1 ||
            s.nHeadK < 1 || s.nHeadV > 4096)
            return invalidFormat(b.arch() + ": implausible " + sizes);
        if (int64_t(s.nHeadV) * s.headSize != inner)
            return invalidFormat(b.arch() + ": inconsistent " + sizes + ": inner_size must be time_step_rank × state_size (" +
                                 std::to_string(int64_t(s.nHeadV) * s.headSize) + ")");
        if (s.nHeadV % s.nHeadK != 0)
            return invalidFormat(b.arch() + ": inconsistent " + sizes +
                                 ": time_step_rank (value heads) must be a multiple of group_count (q/k heads)");
        return Status::ok();
    }

    // Which of the nAll layers are linear attention (the MTP layers after nLayer never are).
    static Result<std::vector<bool>> readRecurrentLayers(const Binder& b, int nAll, int nLayer) {
        std::vector<bool> out(size_t(nAll), false);
        if (b.has("attention.recurrent_layers")) {
            HEARTH_ASSIGN_OR_RETURN(const std::vector<bool> flags, b.flags("attention.recurrent_layers"));
            std::copy(flags.begin(), flags.begin() + nLayer, out.begin());
        } else {
            HEARTH_ASSIGN_OR_RETURN(const int every, b.integer("full_attention_interval", 4));
            if (every < 1) return invalidFormat(b.arch() + ".full_attention_interval must be positive");
            for (int l = 0; l < nLayer; ++l) out[size_t(l)] = (l + 1) % every != 0;
        }
        return out;
    }

    // rope.dimension_sections (interleaved M-RoPE): pair i's sector i mod (sum of sections)
    // rotates by the temporal position when sector mod 3 is 0 and sector < 3·s0, by the height
    // when 1 and < 3·s1, by the width when 2 and < 3·s2, else by the fourth (0: unrotated, its
    // frequency factor +inf). text: the factors of a text position in the first three (-1 when
    // every pair rotates); mrope: per section, the factors that rotate its pairs alone (-1
    // without sections).
    static Result<RopeSections> sectionFactors(Binder& b, int nRot) {
        RopeSections out;
        const std::string key = b.arch() + ".rope.dimension_sections";
        if (!b.file().has(key)) return out;
        // Four sections, given once for all four or one by one (llama.cpp's get_key_or_arr).
        HEARTH_ASSIGN_OR_RETURN(const std::vector<uint64_t> s, b.file().getCounts(key, 4, 4096));
        const uint64_t total = s[0] + s[1] + s[2] + s[3];
        if (total == 0) return out;
        constexpr float kOff = std::numeric_limits<float>::infinity();
        std::vector<float> text(size_t(nRot / 2), 1.0f);
        std::vector<std::vector<float>> sections(3, std::vector<float>(size_t(nRot / 2), kOff));
        bool any = false;
        for (int i = 0; i < nRot / 2; ++i) {
            const uint64_t sector = uint64_t(i) % total, which = sector % 3;
            if (sector < 3 * s[which]) {
                sections[which][size_t(i)] = 1.0f;
            } else {
                text[size_t(i)] = kOff;
                any = true;
            }
        }
        if (any) out.text = b.ownVector("rope_sections.factors", std::move(text));
        const char* names[3] = {"rope_sections.temporal", "rope_sections.height", "rope_sections.width"};
        for (int k = 0; k < 3; ++k) out.mrope[k] = b.ownVector(names[k], std::move(sections[size_t(k)]));
        return out;
    }

    // A full-attention layer's weights under prefix p (blk.N.), as layer l of the graph.
    Status bindAttention(Binder& b, const std::string& p, int l, Layer& Y, const RopeSections& ropeFactors) {
        const int64_t E = m_hp.nEmbd, D = m_hp.headDim;
        const int64_t qDim = int64_t(m_hp.nHead) * D, kvDim = int64_t(m_hp.nHeadKv) * D;
        if (b.hasTensor(p + "attn_qkv.weight")) {
            HEARTH_ASSIGN_OR_RETURN(const std::vector<int32_t> parts,
                                    b.matrixParts(p + "attn_qkv.weight", E, {2 * qDim, kvDim, kvDim}, l));
            Y.attn.wq = parts[0];
            Y.attn.wk = parts[1];
            Y.attn.wv = parts[2];
        } else {
            HEARTH_ASSIGN_OR_RETURN(Y.attn.wq, b.matrix(p + "attn_q.weight", E, 2 * qDim, l));
            HEARTH_ASSIGN_OR_RETURN(Y.attn.wk, b.matrix(p + "attn_k.weight", E, kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(Y.attn.wv, b.matrix(p + "attn_v.weight", E, kvDim, l));
        }
        HEARTH_ASSIGN_OR_RETURN(Y.attn.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
        HEARTH_ASSIGN_OR_RETURN(Y.attn.qNorm, b.vector(p + "attn_q_norm.weight", D, l));
        HEARTH_ASSIGN_OR_RETURN(Y.attn.kNorm, b.vector(p + "attn_k_norm.weight", D, l));
        Y.attn.ropeFactors = ropeFactors.text;
        for (int i = 0; i < 3; ++i) Y.attn.mropeFactors[i] = ropeFactors.mrope[i];
        return Status::ok();
    }

    Status bindFeedForward(Binder& b, const std::string& p, int l, Layer& Y) {
        const int64_t E = m_hp.nEmbd;
        if (!m_moeArch) {
            const int64_t F = m_hp.nFf;
            HEARTH_ASSIGN_OR_RETURN(Y.gate, b.matrix(p + "ffn_gate.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(Y.up, b.matrix(p + "ffn_up.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(Y.down, b.matrix(p + "ffn_down.weight", F, E, l));
            return Status::ok();
        }
        HEARTH_ASSIGN_OR_RETURN(Y.experts, bindExperts(b, l, E, m_moe));
        const int64_t Fs = m_nFfShared;
        HEARTH_ASSIGN_OR_RETURN(Y.sharedGateInp, b.vector(p + "ffn_gate_inp_shexp.weight", E, l));
        HEARTH_ASSIGN_OR_RETURN(Y.sharedGate, b.matrix(p + "ffn_gate_shexp.weight", E, Fs, l));
        HEARTH_ASSIGN_OR_RETURN(Y.sharedUp, b.matrix(p + "ffn_up_shexp.weight", E, Fs, l));
        HEARTH_ASSIGN_OR_RETURN(Y.sharedDown, b.matrix(p + "ffn_down_shexp.weight", Fs, E, l));
        return Status::ok();
    }

    // The gated delta net of layer l on the normed input h [n][E]: [n][E].
    graph::TensorId linearAttention(graph::Graph& g, const StepTensors& in, const KvSetup& kv, graph::TensorId info,
                                    int l, graph::TensorId h) const {
        const Layer& Y = m_layers[size_t(l)];
        const LayerState& st = m_dims.state[size_t(l)];
        const int64_t n = in.n, S = m_ssm.headSize, Hv = m_ssm.nHeadV;
        const graph::TensorId qkv = g.matMul(g.weight(Y.qkv), h); // [n][C]
        const graph::TensorId z = g.matMul(g.weight(Y.z), h);     // [n][Hv·S]
        const graph::TensorId beta = g.sigmoid(g.matMul(g.weight(Y.beta), h)); // [n][Hv]
        const graph::TensorId alpha = g.add(g.matMul(g.weight(Y.alpha), h), g.weight(Y.dtBias));
        const graph::TensorId decay = g.mul(g.softplus(alpha), g.weight(Y.a)); // [n][Hv]: log of the decay
        const graph::TensorId convState = g.state(l, false, kv.stateSlots, st.convRow);
        const graph::TensorId ssmState = g.state(l, true, kv.stateSlots, st.ssmRow);
        const graph::TensorId conv = g.silu(g.ssmConv(qkv, g.weight(Y.conv), convState, info)); // [n][C]
        graph::TensorId o = g.deltaNet(conv, decay, beta, ssmState, info, m_ssm.nHeadK, S, m_hp.normEps); // [n][Hv][S]
        o = g.rmsNormGated(g.reshape(o, S, Hv * n), g.weight(Y.ssmNorm), g.reshape(z, S, Hv * n), m_hp.normEps);
        return g.matMul(g.weight(Y.ssmOut), g.reshape(o, Hv * S, n)); // [n][E]
    }

    graph::TensorId feedForward(graph::Graph& g, const Layer& Y, graph::TensorId x) const {
        if (!m_moeArch)
            return g.matMul(g.weight(Y.down), g.swiGlu(g.matMul(g.weight(Y.gate), x), g.matMul(g.weight(Y.up), x)));
        const int64_t E = m_hp.nEmbd, n = g.tensor(x).rows();
        const graph::TensorId routed = moeFeedForward(g, x, Y.experts, m_moe, MoeGating::SoftmaxNormalized);
        const graph::TensorId shared = g.matMul(
            g.weight(Y.sharedDown), g.swiGlu(g.matMul(g.weight(Y.sharedGate), x), g.matMul(g.weight(Y.sharedUp), x)));
        const graph::TensorId gate = g.sigmoid(g.matMul(g.weight(Y.sharedGateInp), x)); // [n][1]
        // The shared expert's output times its gate: a weighted sum over one "expert".
        return g.add(routed, g.weightedSum(g.reshape(shared, E, 1, n), gate));
    }

    bool m_moeArch = false;
    bool m_mtp = false;
    bool m_mrope = false; // rope.dimension_sections: RoPE by StepInput::RopeT (and RopeH, RopeW)
    int m_shortlist = 0;
    Layer m_mtpLayer;
    int32_t m_ehProj = -1, m_enorm = -1, m_hnorm = -1;
    DecoderHParams m_hp;
    SsmHParams m_ssm;
    MoeHParams m_moe;
    int m_nFfShared = 0;
    int m_nextn = 0;
    AttentionSpec m_spec;
    int32_t m_outputNorm = -1;
    std::vector<Layer> m_layers;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadQwen35Family(const gguf::File& file, bool experts) {
    return bindArchitecture<Qwen35>(file, experts, false, 0);
}

Result<std::unique_ptr<Architecture>> loadQwen35Mtp(const gguf::File& file, bool experts, int shortlist) {
    return bindArchitecture<Qwen35>(file, experts, true, shortlist);
}

Result<std::unique_ptr<Architecture>> loadQwen35(const gguf::File& file) { return loadQwen35Family(file, false); }

} // namespace hearth::model
