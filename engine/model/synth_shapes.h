// The shapes and metadata choices of the synthetic models' presets (hearth-cli synth --preset):
// real architectures' sizes and small ones for tests, read by model/synth.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace hearth::synth {

struct Shape {
    std::string name, arch, description;
    int nLayer, nEmbd, nFf, nHead, nHeadKv, headDim;
    float ropeBase, rmsEps;
    int ctx;
    bool tied, qkvBias, qkNorm, llama3Rope, writeHeadDims;
    // Gemma 3: post-attention and post-FFN norms, a sliding window on all but every
    // `windowPattern`-th layer, linear RoPE scaling of the global layers, final soft-capping.
    bool gemma = false;
    int window = 0, windowPattern = 6;
    float ropeScale = 0.0f, finalSoftcap = 0.0f;
    // Mixture of experts: nExpert experts of hidden width nFfExpert, nUsed per token (0: dense).
    int nExpert = 0, nUsed = 0, nFfExpert = 0;
    // gpt-oss: biases on attention (output too) and experts, per-head sinks, YaRN RoPE scaled by
    // ropeScale from a 4096-position original context, the window on even layers.
    bool oss = false;
    // phi3: one fused q/k/v matrix and one fused gate/up matrix, NeoX RoPE over nRot dims of each
    // head (0: all) with LongRoPE factors, short and long, from an original context of ctxOrig
    // positions and the attention factor they imply; `window` written as the converter does.
    bool phi3 = false;
    int nRot = 0, ctxOrig = 0;
    // mistral3: YaRN by ropeScale from ctxOrig positions (log multiplier 1, as its converter
    // writes) and the attention temperature tempScale per ctxOrig positions.
    bool mistral3 = false;
    float tempScale = 0.0f;
    // gemma4: full-attention layers (every `windowPattern`-th, and the last, as the pattern array
    // says) with heads of headDimFull and nHeadKvFull KV heads, V from K (no attn_v), RoPE on
    // a quarter of their dims through rope_freqs; the others slide over `window` positions with
    // heads of headDim; each layer's output scaled by outScale; with nExpert, experts (fused
    // gate/up, per-expert output scales) beside the dense feed-forward.
    // E2B/E4B: per-layer embeddings of perLayerEmbd per layer; the last sharedKv layers without
    // K/V of their own (kept only when the preset is not cut), their feed-forward twice as wide
    // when doubleWide; V from its own attn_v unless vFromK.
    bool gemma4 = false;
    int headDimFull = 0, nHeadKvFull = 0;
    float outScale = 1.0f;
    int perLayerEmbd = 0, sharedKv = 0;
    bool doubleWide = false, vFromK = true;
    // qwen35 / qwen35moe: linear-attention layers (all but every `windowPattern`-th) with a
    // convolution of ssmConv, Hk = ssmHeadsK q/k heads and Hv = ssmHeadsV v heads of ssmHead;
    // full-attention layers with gated q (2·nHead·headDim rows), RoPE over nRot dims in M-RoPE
    // sections; with nExpert, a shared expert of nFfShared beside the experts.
    bool qwen35 = false;
    int ssmConv = 4, ssmHead = 0, ssmHeadsK = 0, ssmHeadsV = 0, nFfShared = 0;
    int nextn = 0; // multi-token-prediction layers after the nLayer trunk layers
    // lfm2: gated short convolutions of convTaps taps on every layer but those in attnLayers (a
    // bit per layer), which are attention with q/k norms; the final norm is token_embd_norm.
    bool lfm2 = false;
    int convTaps = 3;
    uint64_t attnLayers = 0;
    // bert: an encoder (embeddings, post-norm layers with biases, GELU, no head), ctx positions,
    // attention not causal, CLS pooling unless --pooling says otherwise; rmsEps is LayerNorm's.
    bool bert = false;
    // nomic-bert (with bert): no position embeddings but NeoX RoPE at ropeBase, one fused q/k/v
    // matrix and the output projection without biases, a SwiGLU feed-forward without biases;
    // mean pooling unless --pooling says otherwise.
    bool nomic = false;
    // rank: a reranker and rank pooling. With bert, a classification head (cls: dense with tanh,
    // then one output row: the relevance score), as bge-reranker files are; with qwen3, the two
    // rows cls.output ("yes" and "no") and the rerank prompt, as Qwen3-Reranker files are.
    bool rank = false;
};

// Every preset, in the order synth --list shows them.
std::span<const Shape> shapes();

} // namespace hearth::synth
