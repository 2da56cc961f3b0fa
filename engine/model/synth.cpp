// Synthetic models: real architectures' shapes and metadata, a real tokenizer copied from a
// vocabulary file, and weights from a counter-based generator (value = f(seed, tensor, index)),
// streamed tensor by tensor into the GGUF writer and quantized on the way.
#include "hearth/synth.h"

#include "model/synth_shapes.h"

#include "hearth/gguf.h"
#include "hearth/quant.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace hearth {

namespace {

// The presets' shapes (model/synth_shapes.h).
using synth::Shape;

// gemma4: whether layer l of n is a full-attention layer (every `every`-th, and the last).
bool gemma4Full(int l, int n, int every) { return l % every == every - 1 || l == n - 1; }

uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t nameHash(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// Fills out[0..n) with normal(0, sigma) values number `first`.. of the stream `key`.
// Pairs (2k, 2k+1) come from one Box-Muller draw, so any row boundary gives the same values.
void gaussianRange(uint64_t key, uint64_t first, float* out, int64_t n, float sigma) {
    int64_t i = 0;
    while (i < n) {
        const uint64_t index = first + uint64_t(i);
        const uint64_t r = splitmix(key ^ splitmix(index / 2));
        const double u1 = (double(r >> 40) + 0.5) / double(1ull << 24);
        const double u2 = double(r & 0xffffff) / double(1ull << 24);
        const double radius = std::sqrt(-2.0 * std::log(u1)) * sigma;
        const double angle = 6.283185307179586 * u2;
        if (index % 2 == 0) {
            out[i++] = float(radius * std::cos(angle));
            if (i < n) out[i++] = float(radius * std::sin(angle));
        } else {
            out[i++] = float(radius * std::sin(angle));
        }
    }
}

// llama3-style rope frequency factors (factor 32, low 1, high 4, original context 8192).
std::vector<float> llama3RopeFactors(int headDim, float base) {
    const double factor = 32.0, low = 1.0, high = 4.0, orig = 8192.0;
    const double lowWave = orig / low, highWave = orig / high;
    std::vector<float> f;
    for (int i = 0; i < headDim / 2; ++i) {
        const double freq = std::pow(double(base), -2.0 * i / headDim);
        const double wave = 2.0 * 3.141592653589793 / freq;
        if (wave < highWave) f.push_back(1.0f);
        else if (wave > lowWave) f.push_back(float(factor));
        else {
            const double smooth = (orig / wave - low) / (high - low);
            f.push_back(float(1.0 / ((1.0 - smooth) / factor + smooth)));
        }
    }
    return f;
}

// LongRoPE frequency factors [n] (n = rotated dims / 2): the short set between 1 and 1.8, the long
// one rising from 1.5 to 31.5 along the dims. Far enough apart, and from 1, that RoPE with the
// wrong set (or none) moves the logits well past the tests' tolerances within a few positions.
std::vector<float> longRopeFactors(int n, bool longSet) {
    std::vector<float> f;
    for (int i = 0; i < n; ++i) {
        const double t = n > 1 ? double(i) / (n - 1) : 0.0;
        f.push_back(float(longSet ? 1.5 + 30.0 * t * t : 1.0 + 0.5 * t + 0.3 * (i % 2)));
    }
    return f;
}

struct TensorPlan {
    std::string name;
    std::vector<uint64_t> shape; // ne order
    enum Kind { Random, Ones, Fixed } kind = Random;
    std::vector<float> fixed;
    float sigma = 0.02f; // Random: the values' standard deviation
};

// gemma4's layers (after the embeddings and output norm already in t).
std::vector<TensorPlan> planGemma4(const Shape& s, int nVocab, std::vector<TensorPlan> t) {
    const uint64_t E = uint64_t(s.nEmbd), Lp = uint64_t(s.perLayerEmbd), L = uint64_t(s.nLayer);
    if (Lp > 0) {
        t.push_back({"per_layer_token_embd.weight", {Lp * L, uint64_t(nVocab)}});
        t.push_back({"per_layer_model_proj.weight", {E, Lp * L}});
        t.push_back({"per_layer_proj_norm.weight", {Lp}, TensorPlan::Ones});
    }
    // Proportional RoPE on the full layers: a quarter of the dims rotate (factor 1), the rest
    // not at all (factor 1e30), as the converter writes it.
    const int half = s.headDimFull / 2, rotated = s.headDimFull / 8;
    std::vector<float> factors(size_t(half), 1e30f);
    std::fill(factors.begin(), factors.begin() + rotated, 1.0f);
    t.push_back({"rope_freqs.weight", {uint64_t(half)}, TensorPlan::Fixed, factors});
    for (int l = 0; l < s.nLayer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const bool full = gemma4Full(l, s.nLayer, s.windowPattern), shared = l >= s.nLayer - s.sharedKv;
        const uint64_t D = uint64_t(full ? s.headDimFull : s.headDim), q = uint64_t(s.nHead) * D,
                       kv = uint64_t(full ? s.nHeadKvFull : s.nHeadKv) * D;
        const uint64_t F = uint64_t(s.nFf) * (shared && s.doubleWide ? 2 : 1);
        t.push_back({p + "attn_norm.weight", {E}, TensorPlan::Ones});
        t.push_back({p + "attn_q.weight", {E, q}});
        if (!shared) t.push_back({p + "attn_k.weight", {E, kv}});
        if (!shared && !(full && s.vFromK)) t.push_back({p + "attn_v.weight", {E, kv}});
        t.push_back({p + "attn_output.weight", {q, E}});
        // gemma4 leaves scores unscaled: q/k norm weights of D^-1/4 give them the spread
        // 1/√D gives other models (ones would make every softmax all but one-hot).
        const std::vector<float> qkNorm(D, std::pow(float(D), -0.25f));
        t.push_back({p + "attn_q_norm.weight", {D}, TensorPlan::Fixed, qkNorm});
        if (!shared) t.push_back({p + "attn_k_norm.weight", {D}, TensorPlan::Fixed, qkNorm});
        t.push_back({p + "post_attention_norm.weight", {E}, TensorPlan::Ones});
        if (s.outScale != 1.0f) t.push_back({p + "layer_output_scale.weight", {1}, TensorPlan::Fixed, {s.outScale}});
        t.push_back({p + "ffn_norm.weight", {E}, TensorPlan::Ones});
        t.push_back({p + "ffn_gate.weight", {E, F}});
        t.push_back({p + "ffn_up.weight", {E, F}});
        t.push_back({p + "ffn_down.weight", {F, E}});
        t.push_back({p + "post_ffw_norm.weight", {E}, TensorPlan::Ones});
        if (s.nExpert > 0) {
            const uint64_t n = uint64_t(s.nExpert), Fe = uint64_t(s.nFfExpert);
            // The router sees rms_norm(x) / √E · scale: scales around √E and a router as the
            // other presets' give logits a few units apart, as trained routers have (near-ties
            // would let rounding noise pick different experts).
            std::vector<float> routerScale;
            for (uint64_t i = 0; i < E; ++i) routerScale.push_back(std::sqrt(float(E)) * (0.5f + 0.5f * float(i % 3)));
            t.push_back({p + "ffn_gate_inp.weight", {E, n}, TensorPlan::Random, {}, 4.0f / std::sqrt(float(E))});
            t.push_back({p + "ffn_gate_inp.scale", {E}, TensorPlan::Fixed, routerScale});
            t.push_back({p + "pre_ffw_norm_2.weight", {E}, TensorPlan::Ones});
            t.push_back({p + "post_ffw_norm_1.weight", {E}, TensorPlan::Ones});
            t.push_back({p + "post_ffw_norm_2.weight", {E}, TensorPlan::Ones});
            t.push_back({p + "ffn_gate_up_exps.weight", {E, 2 * Fe, n}});
            t.push_back({p + "ffn_down_exps.weight", {Fe, E, n}});
            std::vector<float> scales;
            for (uint64_t e = 0; e < n; ++e) scales.push_back(0.5f + float(e % 4) * 0.25f);
            t.push_back({p + "ffn_down_exps.scale", {n}, TensorPlan::Fixed, scales});
        }
        if (Lp > 0) {
            t.push_back({p + "inp_gate.weight", {E, Lp}});
            t.push_back({p + "proj.weight", {Lp, E}});
            t.push_back({p + "post_norm.weight", {E}, TensorPlan::Ones});
        }
    }
    return t;
}

// qwen35's layers (after the embeddings and output norm already in t).
std::vector<TensorPlan> planQwen35(const Shape& s, std::vector<TensorPlan> t) {
    const uint64_t E = uint64_t(s.nEmbd), D = uint64_t(s.headDim), q = uint64_t(s.nHead) * D,
                   kv = uint64_t(s.nHeadKv) * D, S = uint64_t(s.ssmHead), Hv = uint64_t(s.ssmHeadsV),
                   C = (2 * uint64_t(s.ssmHeadsK) + Hv) * S;
    for (int l = 0; l < s.nLayer + s.nextn; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const bool mtp = l >= s.nLayer;
        t.push_back({p + "attn_norm.weight", {E}, TensorPlan::Ones});
        t.push_back({p + "post_attention_norm.weight", {E}, TensorPlan::Ones});
        if (mtp) {
            t.push_back({p + "nextn.eh_proj.weight", {2 * E, E}});
            t.push_back({p + "nextn.enorm.weight", {E}, TensorPlan::Ones});
            t.push_back({p + "nextn.hnorm.weight", {E}, TensorPlan::Ones});
            t.push_back({p + "nextn.shared_head_norm.weight", {E}, TensorPlan::Ones});
        }
        if (!mtp && (l + 1) % s.windowPattern != 0) {
            t.push_back({p + "attn_qkv.weight", {E, C}});
            t.push_back({p + "attn_gate.weight", {E, Hv * S}});
            // A convolution that mixes its window, decays between e^-0.1 and e^-3 per token
            // (A = -exp(A_log) as the converter writes it), and betas around one half.
            t.push_back({p + "ssm_conv1d.weight", {uint64_t(s.ssmConv), C}, TensorPlan::Random, {}, 0.4f});
            std::vector<float> a, dt;
            for (uint64_t h = 0; h < Hv; ++h) {
                a.push_back(-0.15f - 0.6f * float(h % 5));
                dt.push_back(0.1f * float(h % 3) - 0.1f);
            }
            t.push_back({p + "ssm_a", {Hv}, TensorPlan::Fixed, a});
            t.push_back({p + "ssm_dt.bias", {Hv}, TensorPlan::Fixed, dt});
            t.push_back({p + "ssm_beta.weight", {E, Hv}, TensorPlan::Random, {}, 0.06f});
            t.push_back({p + "ssm_alpha.weight", {E, Hv}, TensorPlan::Random, {}, 0.06f});
            t.push_back({p + "ssm_norm.weight", {S}, TensorPlan::Ones});
            t.push_back({p + "ssm_out.weight", {Hv * S, E}});
        } else {
            t.push_back({p + "attn_q.weight", {E, 2 * q}});
            t.push_back({p + "attn_k.weight", {E, kv}});
            t.push_back({p + "attn_v.weight", {E, kv}});
            t.push_back({p + "attn_q_norm.weight", {D}, TensorPlan::Ones});
            t.push_back({p + "attn_k_norm.weight", {D}, TensorPlan::Ones});
            t.push_back({p + "attn_output.weight", {q, E}});
        }
        if (s.nExpert > 0) {
            const uint64_t n = uint64_t(s.nExpert), F = uint64_t(s.nFfExpert), Fs = uint64_t(s.nFfShared);
            t.push_back({p + "ffn_gate_inp.weight", {E, n}, TensorPlan::Random, {}, 4.0f / std::sqrt(float(E))});
            t.push_back({p + "ffn_gate_exps.weight", {E, F, n}});
            t.push_back({p + "ffn_up_exps.weight", {E, F, n}});
            t.push_back({p + "ffn_down_exps.weight", {F, E, n}});
            t.push_back({p + "ffn_gate_inp_shexp.weight", {E}, TensorPlan::Random, {}, 0.1f});
            t.push_back({p + "ffn_gate_shexp.weight", {E, Fs}});
            t.push_back({p + "ffn_up_shexp.weight", {E, Fs}});
            t.push_back({p + "ffn_down_shexp.weight", {Fs, E}});
        } else {
            t.push_back({p + "ffn_gate.weight", {E, uint64_t(s.nFf)}});
            t.push_back({p + "ffn_up.weight", {E, uint64_t(s.nFf)}});
            t.push_back({p + "ffn_down.weight", {uint64_t(s.nFf), E}});
        }
    }
    return t;
}

// lfm2's layers (after the embeddings and final norm already in t): each layer's convolution or
// attention and its feed-forward.
std::vector<TensorPlan> planLfm2(const Shape& s, std::vector<TensorPlan> t) {
    const uint64_t E = uint64_t(s.nEmbd), D = uint64_t(s.headDim), q = uint64_t(s.nHead) * D,
                   kv = uint64_t(s.nHeadKv) * D, F = uint64_t(s.nFf);
    for (int l = 0; l < s.nLayer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        t.push_back({p + "attn_norm.weight", {E}, TensorPlan::Ones});
        if ((s.attnLayers >> l) & 1) {
            t.push_back({p + "attn_q.weight", {E, q}});
            t.push_back({p + "attn_k.weight", {E, kv}});
            t.push_back({p + "attn_v.weight", {E, kv}});
            t.push_back({p + "attn_q_norm.weight", {D}, TensorPlan::Ones});
            t.push_back({p + "attn_k_norm.weight", {D}, TensorPlan::Ones});
            t.push_back({p + "attn_output.weight", {q, E}});
        } else {
            // Taps large enough that the window's earlier tokens move the output.
            t.push_back({p + "shortconv.conv.weight", {uint64_t(s.convTaps), E}, TensorPlan::Random, {}, 0.4f});
            t.push_back({p + "shortconv.in_proj.weight", {E, 3 * E}, TensorPlan::Random, {}, 0.06f});
            t.push_back({p + "shortconv.out_proj.weight", {E, E}});
        }
        t.push_back({p + "ffn_norm.weight", {E}, TensorPlan::Ones});
        t.push_back({p + "ffn_gate.weight", {E, F}});
        t.push_back({p + "ffn_up.weight", {E, F}});
        t.push_back({p + "ffn_down.weight", {F, E}});
    }
    return t;
}

// LayerNorm gains around 1 (0.8 to 1.2), different per tensor through `salt`.
std::vector<float> normGains(uint64_t n, uint64_t salt) {
    std::vector<float> g;
    for (uint64_t i = 0; i < n; ++i) g.push_back(0.8f + 0.4f * float(splitmix(salt * 977 + i) % 1000) / 1000.0f);
    return g;
}

// bert: embeddings of tokens, positions and types with their norm, then per layer biased q/k/v and
// output, the attention's norm, a biased feed-forward and the layer's norm. Spreads chosen so that
// attention is far from uniform and GELU sees its curved part.
std::vector<TensorPlan> planBert(const Shape& s, int nVocab) {
    const uint64_t E = uint64_t(s.nEmbd), F = uint64_t(s.nFf), q = uint64_t(s.nHead) * s.headDim;
    std::vector<TensorPlan> t;
    uint64_t salt = 1;
    auto norm = [&](const std::string& name) {
        t.push_back({name + ".weight", {E}, TensorPlan::Fixed, normGains(E, salt++)});
        t.push_back({name + ".bias", {E}, TensorPlan::Random, {}, 0.05f});
    };
    t.push_back({"token_embd.weight", {E, uint64_t(nVocab)}});
    if (!s.nomic) t.push_back({"position_embd.weight", {E, uint64_t(s.ctx)}});
    t.push_back({"token_types.weight", {E, 2}});
    norm("token_embd_norm");
    for (int l = 0; l < s.nLayer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        if (s.nomic) {
            t.push_back({p + "attn_qkv.weight", {E, 3 * q}, TensorPlan::Random, {}, 0.08f});
            t.push_back({p + "attn_output.weight", {q, E}, TensorPlan::Random, {}, 0.05f});
            norm(p + "attn_output_norm");
            t.push_back({p + "ffn_gate.weight", {E, F}, TensorPlan::Random, {}, 0.06f});
            t.push_back({p + "ffn_up.weight", {E, F}, TensorPlan::Random, {}, 0.06f});
            t.push_back({p + "ffn_down.weight", {F, E}, TensorPlan::Random, {}, 0.05f});
            norm(p + "layer_output_norm");
            continue;
        }
        for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
            t.push_back({p + m + ".weight", {E, q}, TensorPlan::Random, {}, m[5] == 'v' ? 0.05f : 0.08f});
            t.push_back({p + m + ".bias", {q}, TensorPlan::Random, {}, 0.05f});
        }
        t.push_back({p + "attn_output.weight", {q, E}, TensorPlan::Random, {}, 0.05f});
        t.push_back({p + "attn_output.bias", {E}, TensorPlan::Random, {}, 0.05f});
        norm(p + "attn_output_norm");
        t.push_back({p + "ffn_up.weight", {E, F}, TensorPlan::Random, {}, 0.06f});
        t.push_back({p + "ffn_up.bias", {F}, TensorPlan::Random, {}, 0.05f});
        t.push_back({p + "ffn_down.weight", {F, E}, TensorPlan::Random, {}, 0.05f});
        t.push_back({p + "ffn_down.bias", {E}, TensorPlan::Random, {}, 0.05f});
        norm(p + "layer_output_norm");
    }
    if (s.rank) { // the classification head; spreads that keep tanh off its flat ends
        t.push_back({"cls.weight", {E, E}, TensorPlan::Random, {}, 0.06f});
        t.push_back({"cls.bias", {E}, TensorPlan::Random, {}, 0.05f});
        t.push_back({"cls.output.weight", {E, 1}, TensorPlan::Random, {}, 0.15f});
        t.push_back({"cls.output.bias", {1}, TensorPlan::Random, {}, 0.05f});
    }
    return t;
}

std::vector<TensorPlan> planTensors(const Shape& s, int nVocab) {
    if (s.bert) return planBert(s, nVocab);
    std::vector<TensorPlan> t;
    const uint64_t E = uint64_t(s.nEmbd), q = uint64_t(s.nHead) * s.headDim,
                   kv = uint64_t(s.nHeadKv) * s.headDim;
    t.push_back({"token_embd.weight", {E, uint64_t(nVocab)}});
    // lfm2's converter names the final norm token_embd_norm.
    t.push_back({s.lfm2 ? "token_embd_norm.weight" : "output_norm.weight", {E}, TensorPlan::Ones});
    if (!s.tied) t.push_back({"output.weight", {E, uint64_t(nVocab)}});
    if (s.rank) t.push_back({"cls.output.weight", {E, 2}}); // a decoder reranker's yes / no rows
    if (s.llama3Rope)
        t.push_back({"rope_freqs.weight", {uint64_t(s.headDim / 2)}, TensorPlan::Fixed,
                     llama3RopeFactors(s.headDim, s.ropeBase)});
    if (s.phi3) {
        const int half = (s.nRot > 0 ? s.nRot : s.headDim) / 2;
        t.push_back({"rope_factors_long.weight", {uint64_t(half)}, TensorPlan::Fixed, longRopeFactors(half, true)});
        t.push_back({"rope_factors_short.weight", {uint64_t(half)}, TensorPlan::Fixed, longRopeFactors(half, false)});
    }
    if (s.gemma4) return planGemma4(s, nVocab, t);
    if (s.qwen35) return planQwen35(s, t);
    if (s.lfm2) return planLfm2(s, t);
    for (int l = 0; l < s.nLayer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        t.push_back({p + "attn_norm.weight", {E}, TensorPlan::Ones});
        if (s.phi3) {
            // Rows: q, then k, then v; the gate's rows, then up's.
            t.push_back({p + "attn_qkv.weight", {E, q + 2 * kv}});
            t.push_back({p + "attn_output.weight", {q, E}});
            t.push_back({p + "ffn_norm.weight", {E}, TensorPlan::Ones});
            t.push_back({p + "ffn_up.weight", {E, 2 * uint64_t(s.nFf)}});
            t.push_back({p + "ffn_down.weight", {uint64_t(s.nFf), E}});
            continue;
        }
        t.push_back({p + "attn_q.weight", {E, q}});
        t.push_back({p + "attn_k.weight", {E, kv}});
        t.push_back({p + "attn_v.weight", {E, kv}});
        if (s.qkvBias) {
            t.push_back({p + "attn_q.bias", {q}});
            t.push_back({p + "attn_k.bias", {kv}});
            t.push_back({p + "attn_v.bias", {kv}});
        }
        if (s.qkNorm) {
            t.push_back({p + "attn_q_norm.weight", {uint64_t(s.headDim)}, TensorPlan::Ones});
            t.push_back({p + "attn_k_norm.weight", {uint64_t(s.headDim)}, TensorPlan::Ones});
        }
        t.push_back({p + "attn_output.weight", {q, E}});
        if (s.oss) {
            t.push_back({p + "attn_output.bias", {E}});
            t.push_back({p + "attn_sinks.weight", {uint64_t(s.nHead)}});
            t.push_back({p + "post_attention_norm.weight", {E}, TensorPlan::Ones});
        }
        if (s.gemma) t.push_back({p + "post_attention_norm.weight", {E}, TensorPlan::Ones});
        if (!s.oss) t.push_back({p + "ffn_norm.weight", {E}, TensorPlan::Ones});
        if (s.nExpert > 0) {
            const uint64_t n = uint64_t(s.nExpert), F = uint64_t(s.nFfExpert);
            // Routers with clear preferences (logits a few units apart), as trained ones have:
            // near-ties would let rounding noise pick different experts.
            t.push_back({p + "ffn_gate_inp.weight", {E, n}, TensorPlan::Random, {}, 4.0f / std::sqrt(float(E))});
            t.push_back({p + "ffn_gate_exps.weight", {E, F, n}});
            t.push_back({p + "ffn_up_exps.weight", {E, F, n}});
            t.push_back({p + "ffn_down_exps.weight", {F, E, n}});
            if (s.oss) {
                t.push_back({p + "ffn_gate_inp.bias", {n}});
                t.push_back({p + "ffn_gate_exps.bias", {F, n}});
                t.push_back({p + "ffn_up_exps.bias", {F, n}});
                t.push_back({p + "ffn_down_exps.bias", {E, n}});
            }
            continue;
        }
        t.push_back({p + "ffn_gate.weight", {E, uint64_t(s.nFf)}});
        t.push_back({p + "ffn_up.weight", {E, uint64_t(s.nFf)}});
        t.push_back({p + "ffn_down.weight", {uint64_t(s.nFf), E}});
        if (s.gemma) t.push_back({p + "post_ffw_norm.weight", {E}, TensorPlan::Ones});
    }
    return t;
}

} // namespace

std::vector<SynthPreset> synthPresets() {
    std::vector<SynthPreset> out;
    for (const Shape& s : synth::shapes()) out.push_back({s.name, s.description});
    return out;
}

Status synthesizeModel(const SynthOptions& o) {
    const Shape* found = nullptr;
    for (const Shape& s : synth::shapes())
        if (s.name == o.preset) found = &s;
    if (!found) return invalidArgument("unknown preset '" + o.preset + "' (see synth --list)");
    Shape s = *found;
    if (o.layers < 0 || o.layers > 4096) return invalidArgument("--layers must be 1..4096");
    if (o.pooling > 4) return invalidArgument("--pooling must be 0..4 (none, mean, cls, last, rank)");
    if (o.layers > 0) s.nLayer = o.layers;
    if (o.experts != 0) {
        if (s.nExpert == 0) return invalidArgument("--experts: preset '" + o.preset + "' has no experts");
        if (o.experts < s.nUsed || o.experts > 4096)
            return invalidArgument("--experts must be " + std::to_string(s.nUsed) + "..4096 (" +
                                   std::to_string(s.nUsed) + " are used per token)");
        s.nExpert = o.experts;
    }
    // A cut keeps no shared-KV layers: which layers they read depends on the whole stack.
    if (o.layers > 0 && o.layers != found->nLayer) s.sharedKv = 0;
    const std::optional<quant::Mix> mix = quant::mixFromName(o.typeOrMix);
    if (!mix) return invalidArgument("unknown type or mix '" + o.typeOrMix + "'");

    HEARTH_ASSIGN_OR_RETURN(gguf::File vocab, gguf::File::open(o.vocabPath));
    const gguf::Value* tokens = vocab.find("tokenizer.ggml.tokens");
    if (!tokens || !tokens->asStringArray() || tokens->arraySize() == 0)
        return invalidFormat(o.vocabPath + " has no tokenizer.ggml.tokens list");
    const int nVocab = int(tokens->arraySize());

    gguf::Writer w;
    const std::string a = s.arch + ".";
    w.set("general.architecture", gguf::Value::string(s.arch));
    // llama.cpp gives the special tokens of a model named "phi3" or "phi-3" Phi-3's attributes,
    // looking them up by text, which fails on the other vocabularies synthetic models carry; so
    // "phi 3" in the name.
    std::string name = "hearth-synth " + s.name;
    if (const size_t at = name.find("phi3"); at != std::string::npos) name.replace(at, 4, "phi 3");
    w.set("general.name", gguf::Value::string(name));
    w.set("general.file_type", gguf::Value::u32(mix->fileType));
    if (mix->baseType != quant::Type::F32 && mix->baseType != quant::Type::F16 &&
        mix->baseType != quant::Type::BF16)
        w.set("general.quantization_version", gguf::Value::u32(2));
    w.set(a + "context_length", gguf::Value::u32(uint32_t(s.ctx)));
    w.set(a + "embedding_length", gguf::Value::u32(uint32_t(s.nEmbd)));
    w.set(a + "block_count", gguf::Value::u32(uint32_t(s.nLayer + s.nextn)));
    if (s.nextn > 0) w.set(a + "nextn_predict_layers", gguf::Value::u32(uint32_t(s.nextn)));
    if (o.pooling >= 0) w.set(a + "pooling_type", gguf::Value::u32(uint32_t(o.pooling)));
    else if (s.nomic) w.set(a + "pooling_type", gguf::Value::u32(1)); // mean, as nomic-embed-text files say
    else if (s.rank) w.set(a + "pooling_type", gguf::Value::u32(4)); // rank, as reranker files say
    else if (s.bert) w.set(a + "pooling_type", gguf::Value::u32(2)); // CLS, as BGE files say
    w.set(a + "feed_forward_length", gguf::Value::u32(uint32_t(s.nFf)));
    w.set(a + "attention.head_count", gguf::Value::u32(uint32_t(s.nHead)));
    w.set(a + "attention.head_count_kv", gguf::Value::u32(uint32_t(s.nHeadKv)));
    if (s.bert) {
        w.set(a + "attention.layer_norm_epsilon", gguf::Value::f32(s.rmsEps));
        w.set(a + "attention.causal", gguf::Value::boolean(false));
        if (s.nomic) w.set(a + "rope.freq_base", gguf::Value::f32(s.ropeBase));
        if (!vocab.has("tokenizer.ggml.token_type_count")) w.set("tokenizer.ggml.token_type_count", gguf::Value::u32(2));
    } else {
        w.set(a + "rope.freq_base", gguf::Value::f32(s.ropeBase));
        w.set(a + "attention.layer_norm_rms_epsilon", gguf::Value::f32(s.rmsEps));
        w.set(a + "rope.dimension_count", gguf::Value::u32(uint32_t(s.nRot > 0 ? s.nRot : s.headDim)));
    }
    if (s.writeHeadDims) {
        w.set(a + "attention.key_length", gguf::Value::u32(uint32_t(s.headDim)));
        w.set(a + "attention.value_length", gguf::Value::u32(uint32_t(s.headDim)));
    }
    if (s.nExpert > 0) {
        w.set(a + "expert_count", gguf::Value::u32(uint32_t(s.nExpert)));
        w.set(a + "expert_used_count", gguf::Value::u32(uint32_t(s.nUsed)));
        w.set(a + "expert_feed_forward_length", gguf::Value::u32(uint32_t(s.nFfExpert)));
    }
    if (s.oss) {
        w.set(a + "attention.sliding_window", gguf::Value::u32(uint32_t(s.window)));
        w.set(a + "rope.scaling.type", gguf::Value::string("yarn"));
        w.set(a + "rope.scaling.factor", gguf::Value::f32(s.ropeScale));
        w.set(a + "rope.scaling.original_context_length", gguf::Value::u32(4096));
    }
    if (s.phi3) {
        // As the converter writes them: the window, the original context, and LongRoPE's
        // attention factor sqrt(1 + ln(context / original) / ln(original)).
        w.set(a + "attention.sliding_window", gguf::Value::u32(uint32_t(s.window)));
        w.set(a + "rope.scaling.original_context_length", gguf::Value::u32(uint32_t(s.ctxOrig)));
        const double scale = double(s.ctx) / s.ctxOrig;
        const double attn = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(double(s.ctxOrig))) : 1.0;
        w.set(a + "rope.scaling.attn_factor", gguf::Value::f32(float(attn)));
    }
    if (s.mistral3) {
        w.set(a + "rope.scaling.type", gguf::Value::string("yarn"));
        w.set(a + "rope.scaling.factor", gguf::Value::f32(s.ropeScale));
        w.set(a + "rope.scaling.original_context_length", gguf::Value::u32(uint32_t(s.ctxOrig)));
        w.set(a + "rope.scaling.yarn_beta_fast", gguf::Value::f32(32.0f));
        w.set(a + "rope.scaling.yarn_beta_slow", gguf::Value::f32(1.0f));
        w.set(a + "rope.scaling.yarn_log_multiplier", gguf::Value::f32(1.0f));
        w.set(a + "attention.temperature_scale", gguf::Value::f32(s.tempScale));
    }
    if (s.gemma) {
        w.set(a + "attention.sliding_window", gguf::Value::u32(uint32_t(s.window)));
        w.set(a + "attention.sliding_window_pattern", gguf::Value::u32(uint32_t(s.windowPattern)));
        if (s.ropeScale > 0.0f) {
            w.set(a + "rope.scaling.type", gguf::Value::string("linear"));
            w.set(a + "rope.scaling.factor", gguf::Value::f32(s.ropeScale));
        }
        if (s.finalSoftcap > 0.0f) w.set(a + "final_logit_softcapping", gguf::Value::f32(s.finalSoftcap));
    }
    if (s.gemma4) {
        // As the converter writes them: full layers' head size under key_length, the sliding
        // layers' under key_length_swa, KV heads (i32, Python's integers) and the sliding flags
        // (bool) one per layer.
        std::vector<int32_t> kvHeads;
        std::vector<uint8_t> flags;
        for (int l = 0; l < s.nLayer; ++l) {
            const bool full = gemma4Full(l, s.nLayer, s.windowPattern);
            kvHeads.push_back(int32_t(full ? s.nHeadKvFull : s.nHeadKv));
            flags.push_back(full ? 0 : 1);
        }
        w.set(a + "attention.head_count_kv", gguf::Value::i32Array(kvHeads));
        w.set(a + "attention.key_length", gguf::Value::u32(uint32_t(s.headDimFull)));
        w.set(a + "attention.value_length", gguf::Value::u32(uint32_t(s.headDimFull)));
        w.set(a + "attention.key_length_swa", gguf::Value::u32(uint32_t(s.headDim)));
        w.set(a + "attention.value_length_swa", gguf::Value::u32(uint32_t(s.headDim)));
        w.set(a + "rope.dimension_count", gguf::Value::u32(uint32_t(s.headDimFull)));
        w.set(a + "rope.dimension_count_swa", gguf::Value::u32(uint32_t(s.headDim)));
        w.set(a + "rope.freq_base_swa", gguf::Value::f32(10000.0f));
        w.set(a + "attention.sliding_window", gguf::Value::u32(uint32_t(s.window)));
        w.set(a + "attention.sliding_window_pattern", gguf::Value::numericArray(gguf::ValueType::Bool, flags));
        w.set(a + "attention.shared_kv_layers", gguf::Value::u32(uint32_t(s.sharedKv)));
        w.set(a + "embedding_length_per_layer_input", gguf::Value::u32(uint32_t(s.perLayerEmbd)));
        if (s.sharedKv > 0 && s.doubleWide) {
            std::vector<int32_t> ffs;
            for (int l = 0; l < s.nLayer; ++l) ffs.push_back(int32_t(s.nFf * (l >= s.nLayer - s.sharedKv ? 2 : 1)));
            w.set(a + "feed_forward_length", gguf::Value::i32Array(ffs));
        }
        if (s.finalSoftcap > 0.0f) w.set(a + "final_logit_softcapping", gguf::Value::f32(s.finalSoftcap));
    }
    if (s.qwen35) {
        // As the converter writes them: the delta net's sizes, the attention interval and the
        // layer map from the config's layer_types (bool, one per layer, the MTP layers false),
        // M-RoPE sections over the rotated pairs (i32; 11:11:10 as in the real files, scaled).
        const int pairs = s.nRot / 2, t = (pairs * 11 + 16) / 32, hh = (pairs * 11 + 16) / 32;
        w.set(a + "ssm.conv_kernel", gguf::Value::u32(uint32_t(s.ssmConv)));
        w.set(a + "ssm.state_size", gguf::Value::u32(uint32_t(s.ssmHead)));
        w.set(a + "ssm.group_count", gguf::Value::u32(uint32_t(s.ssmHeadsK)));
        w.set(a + "ssm.time_step_rank", gguf::Value::u32(uint32_t(s.ssmHeadsV)));
        w.set(a + "ssm.inner_size", gguf::Value::u32(uint32_t(s.ssmHeadsV * s.ssmHead)));
        std::vector<uint8_t> recurrent;
        for (int l = 0; l < s.nLayer + s.nextn; ++l) recurrent.push_back(l < s.nLayer && (l + 1) % s.windowPattern != 0);
        w.set(a + "attention.recurrent_layers", gguf::Value::numericArray(gguf::ValueType::Bool, recurrent));
        w.set(a + "full_attention_interval", gguf::Value::u32(uint32_t(s.windowPattern)));
        w.set(a + "rope.dimension_sections", gguf::Value::i32Array({t, hh, pairs - t - hh, 0}));
        if (s.nExpert > 0) w.set(a + "expert_shared_feed_forward_length", gguf::Value::u32(uint32_t(s.nFfShared)));
    }
    if (s.lfm2) {
        // As the converter writes them: no K/V heads on the convolution layers, the taps, the vocabulary size.
        std::vector<int32_t> kvHeads;
        for (int l = 0; l < s.nLayer; ++l) kvHeads.push_back((s.attnLayers >> l) & 1 ? s.nHeadKv : 0);
        w.set(a + "attention.head_count_kv", gguf::Value::i32Array(kvHeads));
        w.set(a + "shortconv.l_cache", gguf::Value::u32(uint32_t(s.convTaps)));
        w.set(a + "vocab_size", gguf::Value::u32(uint32_t(nVocab)));
    }
    for (const gguf::KeyValue& kv : vocab.metadata())
        if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
    if (s.rank && !s.bert) { // the prompt llama.cpp's converter gives Qwen3-Reranker files
        w.set("tokenizer.chat_template.rerank",
              gguf::Value::string(
                  "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
                  "Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n"
                  "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
                  "<Query>: {query}\n<Document>: {document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        w.set("tokenizer.chat_templates", gguf::Value::stringArray({"rerank"}));
        w.set(a + "classifier.output_labels", gguf::Value::stringArray({"yes", "no"}));
    }

    const std::vector<TensorPlan> plan = planTensors(s, nVocab);
    const int threads = std::max(1, o.threads);
    for (size_t ti = 0; ti < plan.size(); ++ti) {
        const TensorPlan& p = plan[ti];
        quant::TensorRole role;
        role.name = p.name;
        role.ne0 = p.shape[0];
        role.nDims = uint32_t(p.shape.size());
        role.nLayers = uint32_t(s.nLayer);
        role.gqa = uint32_t(s.nHead / s.nHeadKv);
        role.nExpert = uint32_t(s.nExpert);
        role.hasOutput = !s.tied;
        const quant::Type type = quant::chooseType(*mix, role);
        const int64_t rowLen = int64_t(p.shape[0]);
        int64_t rows = 1;
        for (size_t d = 1; d < p.shape.size(); ++d) rows *= int64_t(p.shape[d]);
        const uint64_t key = splitmix(o.seed ^ nameHash(p.name));
        HEARTH_ASSIGN_OR_RETURN(uint64_t rowBytes, quant::rowBytes(type, uint64_t(rowLen)));
        auto producer = [p, type, rowLen, rows, key, rowBytes, threads, ti, n = plan.size(),
                         progress = o.progress](uint8_t* dst, uint64_t) -> Status {
            std::vector<Status> results(static_cast<size_t>(threads));
            const bool flatImportance = quant::requiresImportance(type);
            const std::vector<float> flat(flatImportance ? static_cast<size_t>(rowLen) : 0, 1.0f);
            auto work = [&](int w) {
                std::vector<float> row(static_cast<size_t>(rowLen));
                for (int64_t r = rows * w / threads; r < rows * (w + 1) / threads; ++r) {
                    if (p.kind == TensorPlan::Random)
                        gaussianRange(key, uint64_t(r * rowLen), row.data(), rowLen, p.sigma);
                    else if (p.kind == TensorPlan::Ones)
                        std::fill(row.begin(), row.end(), 1.0f);
                    else
                        std::copy(p.fixed.begin(), p.fixed.end(), row.begin());
                    // Types that need an importance vector get a flat one (see synth's help).
                    Status st = flatImportance
                                    ? quant::quantizeRowWeighted(type, row.data(), dst + uint64_t(r) * rowBytes,
                                                                 rowLen, flat.data())
                                    : quant::quantizeRow(type, row.data(), dst + uint64_t(r) * rowBytes, rowLen);
                    if (!st.isOk()) {
                        results[size_t(w)] = st;
                        return;
                    }
                }
            };
            if (threads == 1 || rows < 2) {
                work(0);
                for (int w = 1; w < threads; ++w) work(w);
            } else {
                std::vector<std::thread> pool;
                for (int w = 0; w < threads; ++w) pool.emplace_back(work, w);
                for (auto& th : pool) th.join();
            }
            for (const Status& st : results) HEARTH_RETURN_IF_ERROR(st);
            if (progress) progress(ti + 1, n, p.name);
            return Status::ok();
        };
        HEARTH_RETURN_IF_ERROR(w.addTensor(p.name, type, p.shape, producer));
    }
    return w.writeFile(o.outPath);
}

} // namespace hearth
