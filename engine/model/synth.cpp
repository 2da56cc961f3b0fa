// Synthetic models: real architectures' shapes and metadata, a real tokenizer copied from a
// vocabulary file, and weights from a counter-based generator (value = f(seed, tensor, index)),
// streamed tensor by tensor into the GGUF writer and quantized on the way.
#include "hearth/synth.h"

#include "hearth/gguf.h"
#include "hearth/quant.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace hearth {

namespace {

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

const Shape kShapes[] = {
    {"llama-tiny", "llama", "llama, 4 layers, 256 wide, 8/4 heads (a few MB)", 4, 256, 768, 8, 4,
     32, 10000.0f, 1e-5f, 2048, false, false, false, false, false},
    {"mixtral-tiny", "llama", "llama with experts (as Mixtral files are), 4 layers, 256 wide, 8/4 heads, 8 experts of 256, 2 per token",
     4, 256, 256, 8, 4, 32, 1000000.0f, 1e-5f, 4096, false, false, false, false, false, false, 0, 6, 0.0f, 0.0f, 8, 2,
     256},
    {"llama3.2-1b", "llama", "Llama 3.2 1B shape: 16 layers, 2048, 32/8 heads, tied", 16, 2048,
     8192, 32, 8, 64, 500000.0f, 1e-5f, 131072, true, false, false, true, false},
    {"qwen2.5-0.5b", "qwen2", "Qwen2.5 0.5B shape: 24 layers, 896, 14/2 heads, QKV bias, tied", 24,
     896, 4864, 14, 2, 64, 1000000.0f, 1e-6f, 32768, true, true, false, false, false},
    {"qwen2-tiny", "qwen2", "qwen2, 2 layers, 256 wide, 4/2 heads of 64, QKV bias, tied", 2, 256, 768, 4, 2, 64,
     1000000.0f, 1e-6f, 4096, true, true, false, false, false},
    {"qwen3-0.6b", "qwen3", "Qwen3 0.6B shape: 28 layers, 1024, 16/8 heads of 128, Q/K norm, tied",
     28, 1024, 3072, 16, 8, 128, 1000000.0f, 1e-6f, 40960, true, false, true, false, true},
    {"qwen3-tiny", "qwen3", "qwen3, 2 layers, 256 wide, 4/2 heads of 64, Q/K norm, tied (embedding tests)", 2, 256,
     768, 4, 2, 64, 1000000.0f, 1e-6f, 4096, true, false, true, false, true},
    {"gemma3-tiny", "gemma3",
     "gemma3, 6 layers (5 sliding, window 8, then 1 global), 256 wide, 4/2 heads of 64, final soft cap 30", 6, 256,
     768, 4, 2, 64, 1000000.0f, 1e-6f, 2048, true, false, true, false, true, true, 8, 6, 8.0f, 30.0f},
    {"gemma3-1b", "gemma3", "Gemma 3 1B shape: 26 layers, 1152, 4/1 heads of 256, window 512, 5:1 sliding/global", 26,
     1152, 6912, 4, 1, 256, 1000000.0f, 1e-6f, 32768, true, false, true, false, true, true, 512, 6, 0.0f, 0.0f},
    {"gemma3-4b", "gemma3", "Gemma 3 4B shape: 34 layers, 2560, 8/4 heads of 256, window 1024, linear RoPE x8", 34,
     2560, 10240, 8, 4, 256, 1000000.0f, 1e-6f, 131072, true, false, true, false, true, true, 1024, 6, 8.0f, 0.0f},
    {"qwen3moe-tiny", "qwen3moe", "qwen3moe, 4 layers, 256 wide, 4/2 heads of 64, 16 experts of 128, 4 per token", 4,
     256, 512, 4, 2, 64, 1000000.0f, 1e-6f, 4096, false, false, true, false, true, false, 0, 6, 0.0f, 0.0f, 16, 4, 128},
    {"qwen3-30b-a3b", "qwen3moe",
     "Qwen3-30B-A3B shape: 48 layers, 2048, 32/4 heads of 128, 128 experts of 768, 8 per token", 48, 2048, 6144, 32,
     4, 128, 1000000.0f, 1e-6f, 40960, false, false, true, false, true, false, 0, 6, 0.0f, 0.0f, 128, 8, 768},
    {"gpt-oss-tiny", "gpt-oss", "gpt-oss, 4 layers (window 8 on even layers), 256 wide, 4/2 heads of 64, 8 experts of 256, 2 per token",
     4, 256, 256, 4, 2, 64, 150000.0f, 1e-5f, 131072, false, true, false, false, true, false, 8, 2, 32.0f, 0.0f, 8, 2, 256,
     true},
    {"gpt-oss-20b", "gpt-oss", "gpt-oss-20b shape: 24 layers, 2880, 64/8 heads of 64, 32 experts of 2880, 4 per token, window 128",
     24, 2880, 2880, 64, 8, 64, 150000.0f, 1e-5f, 131072, false, true, false, false, true, false, 128, 2, 32.0f, 0.0f, 32,
     4, 2880, true},
    // The 8-position window is written but, as in llama.cpp, not applied: the test sequence
    // outruns it. The original context of 128 puts any context over 128 on the long factors.
    {.name = "phi3-tiny", .arch = "phi3",
     .description = "phi3, 4 layers, 256 wide, 4/4 heads of 64, fused QKV and gate/up, LongRoPE from 128 "
                    "positions (window 8 written, not applied)",
     .nLayer = 4, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 4, .headDim = 64, .ropeBase = 10000.0f,
     .rmsEps = 1e-5f, .ctx = 4096, .tied = false, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false, .window = 8, .phi3 = true, .nRot = 64, .ctxOrig = 128},
    {.name = "phi4-mini", .arch = "phi3",
     .description = "Phi-4-mini shape: 32 layers, 3072, 24/8 heads of 128, RoPE on 96 dims, LongRoPE "
                    "4096 -> 131072, tied",
     .nLayer = 32, .nEmbd = 3072, .nFf = 8192, .nHead = 24, .nHeadKv = 8, .headDim = 128, .ropeBase = 10000.0f,
     .rmsEps = 1e-5f, .ctx = 131072, .tied = true, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false, .window = 262144, .phi3 = true, .nRot = 96, .ctxOrig = 4096},
    // An original context of 4 positions puts the test sequences past four temperature steps, and
    // a temperature of 1 (real files: 0.1) scales q enough that leaving it out fails the tests.
    {.name = "mistral3-tiny", .arch = "mistral3",
     .description = "mistral3, 4 layers, 256 wide, 8/4 heads of 32, YaRN x16 and attention temperature 1 "
                    "from 4 positions",
     .nLayer = 4, .nEmbd = 256, .nFf = 768, .nHead = 8, .nHeadKv = 4, .headDim = 32, .ropeBase = 1000000.0f,
     .rmsEps = 1e-5f, .ctx = 4096, .tied = false, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = true, .ropeScale = 16.0f, .ctxOrig = 4, .mistral3 = true, .tempScale = 1.0f},
    {.name = "ministral3-3b", .arch = "mistral3",
     .description = "Ministral 3 3B shape: 26 layers, 3072, 32/8 heads of 128, YaRN x16 from 16384, "
                    "attention temperature 0.1, tied",
     .nLayer = 26, .nEmbd = 3072, .nFf = 9216, .nHead = 32, .nHeadKv = 8, .headDim = 128, .ropeBase = 1000000.0f,
     .rmsEps = 1e-5f, .ctx = 262144, .tied = true, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = true, .ropeScale = 16.0f, .ctxOrig = 16384, .mistral3 = true, .tempScale = 0.1f},
    {.name = "smollm3-tiny", .arch = "smollm3",
     .description = "smollm3, 4 layers (the fourth without RoPE), 256 wide, 8/4 heads of 32, tied",
     .nLayer = 4, .nEmbd = 256, .nFf = 768, .nHead = 8, .nHeadKv = 4, .headDim = 32, .ropeBase = 10000.0f,
     .rmsEps = 1e-6f, .ctx = 65536, .tied = true, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false},
    {.name = "smollm3-3b", .arch = "smollm3",
     .description = "SmolLM3 3B shape: 36 layers (every fourth without RoPE), 2048, 16/4 heads of 128, tied",
     .nLayer = 36, .nEmbd = 2048, .nFf = 11008, .nHead = 16, .nHeadKv = 4, .headDim = 128, .ropeBase = 5000000.0f,
     .rmsEps = 1e-6f, .ctx = 65536, .tied = true, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false},
    {.name = "gemma4-tiny", .arch = "gemma4",
     .description = "gemma4, 6 layers (sliding, window 8; full every 6th and the last), 256 wide, 4 heads, 2 KV "
                    "heads of 64 sliding / 1 of 128 full with V = K, proportional RoPE, soft cap 30",
     .nLayer = 6, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 2, .headDim = 64, .ropeBase = 1000000.0f,
     .rmsEps = 1e-6f, .ctx = 4096, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .window = 8, .windowPattern = 6, .finalSoftcap = 30.0f, .gemma4 = true,
     .headDimFull = 128, .nHeadKvFull = 1, .outScale = 0.75f},
    {.name = "gemma4-moe-tiny", .arch = "gemma4",
     .description = "gemma4 with experts, 4 layers as gemma4-tiny, 8 experts of 128 (fused gate/up), 2 per token, "
                    "beside a dense feed-forward of 256",
     .nLayer = 4, .nEmbd = 256, .nFf = 256, .nHead = 4, .nHeadKv = 2, .headDim = 64, .ropeBase = 1000000.0f,
     .rmsEps = 1e-6f, .ctx = 4096, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .window = 8, .windowPattern = 6, .finalSoftcap = 30.0f, .nExpert = 8, .nUsed = 2,
     .nFfExpert = 128, .gemma4 = true, .headDimFull = 128, .nHeadKvFull = 1, .outScale = 0.75f},
    {.name = "gemma4-e-tiny", .arch = "gemma4",
     .description = "gemma4 as E2B, 4 layers (sliding, window 8, and full in turn; the last 2 read the K/V of "
                    "layers 0 and 1, their feed-forward twice as wide), 256 wide, 4 heads, 1 KV head of 64 / "
                    "128, per-layer embeddings of 64",
     .nLayer = 4, .nEmbd = 256, .nFf = 256, .nHead = 4, .nHeadKv = 1, .headDim = 64, .ropeBase = 1000000.0f,
     .rmsEps = 1e-6f, .ctx = 4096, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .window = 8, .windowPattern = 2, .finalSoftcap = 30.0f, .gemma4 = true,
     .headDimFull = 128, .nHeadKvFull = 1, .perLayerEmbd = 64, .sharedKv = 2, .doubleWide = true, .vFromK = false},
    {.name = "gemma4-e2b", .arch = "gemma4",
     .description = "Gemma 4 E2B shape: 35 layers, 1536, 8 heads, 1 KV head of 256 sliding (window 512) / 512 "
                    "full (every 5th), the last 20 sharing K/V with feed-forward 12288, per-layer embeddings of 256",
     .nLayer = 35, .nEmbd = 1536, .nFf = 6144, .nHead = 8, .nHeadKv = 1, .headDim = 256, .ropeBase = 1000000.0f,
     .rmsEps = 1e-6f, .ctx = 131072, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .window = 512, .windowPattern = 5, .finalSoftcap = 30.0f, .gemma4 = true,
     .headDimFull = 512, .nHeadKvFull = 1, .perLayerEmbd = 256, .sharedKv = 20, .doubleWide = true, .vFromK = false},
    {.name = "gemma4-e4b", .arch = "gemma4",
     .description = "Gemma 4 E4B shape: 42 layers, 2560, 8 heads, 2 KV heads of 256 sliding (window 512) / 512 "
                    "full (every 6th), the last 18 sharing K/V, per-layer embeddings of 256",
     .nLayer = 42, .nEmbd = 2560, .nFf = 10240, .nHead = 8, .nHeadKv = 2, .headDim = 256, .ropeBase = 1000000.0f,
     .rmsEps = 1e-6f, .ctx = 131072, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .window = 512, .windowPattern = 6, .finalSoftcap = 30.0f, .gemma4 = true,
     .headDimFull = 512, .nHeadKvFull = 2, .perLayerEmbd = 256, .sharedKv = 18, .vFromK = false},
    {.name = "gemma4-31b", .arch = "gemma4",
     .description = "Gemma 4 31B shape: 60 layers, 5376, 32 heads, 16 KV heads of 256 sliding (window 1024) / 4 "
                    "of 512 full (every 6th, V = K), tied, soft cap 30",
     .nLayer = 60, .nEmbd = 5376, .nFf = 21504, .nHead = 32, .nHeadKv = 16, .headDim = 256,
     .ropeBase = 1000000.0f, .rmsEps = 1e-6f, .ctx = 262144, .tied = true, .qkvBias = false, .qkNorm = true,
     .llama3Rope = false, .writeHeadDims = true, .window = 1024, .windowPattern = 6, .finalSoftcap = 30.0f,
     .gemma4 = true, .headDimFull = 512, .nHeadKvFull = 4},
    {.name = "gemma4-26b-a4b", .arch = "gemma4",
     .description = "Gemma 4 26B-A4B shape: 30 layers, 2816, 16 heads, 8 KV heads of 256 sliding (window 1024) / 2 "
                    "of 512 full (V = K), dense feed-forward 2112 beside 128 experts of 704, 8 per token",
     .nLayer = 30, .nEmbd = 2816, .nFf = 2112, .nHead = 16, .nHeadKv = 8, .headDim = 256,
     .ropeBase = 1000000.0f, .rmsEps = 1e-6f, .ctx = 262144, .tied = true, .qkvBias = false, .qkNorm = true,
     .llama3Rope = false, .writeHeadDims = true, .window = 1024, .windowPattern = 6, .finalSoftcap = 30.0f,
     .nExpert = 128, .nUsed = 8, .nFfExpert = 704, .gemma4 = true, .headDimFull = 512, .nHeadKvFull = 2},
    {.name = "qwen35-tiny", .arch = "qwen35",
     .description = "qwen35, 4 layers (3 gated delta-net, then full attention) and a multi-token-prediction "
                    "layer, 256 wide, 4/2 heads of 64 (RoPE on 16 dims), delta net 2 q/k and 4 v heads of 32, "
                    "convolution 4",
     .nLayer = 4, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 2, .headDim = 64, .ropeBase = 10000000.0f,
     .rmsEps = 1e-6f, .ctx = 262144, .tied = false, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .windowPattern = 4, .nRot = 16, .qwen35 = true, .ssmHead = 32, .ssmHeadsK = 2,
     .ssmHeadsV = 4, .nextn = 1},
    {.name = "qwen35moe-tiny", .arch = "qwen35moe",
     .description = "qwen35moe, 4 layers as qwen35-tiny, 8 experts of 128, 2 per token, a shared expert of 256, "
                    "and a multi-token-prediction layer",
     .nLayer = 4, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 2, .headDim = 64, .ropeBase = 10000000.0f,
     .rmsEps = 1e-6f, .ctx = 262144, .tied = false, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .windowPattern = 4, .nExpert = 8, .nUsed = 2, .nFfExpert = 128, .nRot = 16,
     .qwen35 = true, .ssmHead = 32, .ssmHeadsK = 2, .ssmHeadsV = 4, .nFfShared = 256, .nextn = 1},
    {.name = "qwen35-2b", .arch = "qwen35",
     .description = "Qwen3.5 2B shape: 24 layers (3:1 delta net / attention), 2048, 8/2 heads of 256 (RoPE on 64), "
                    "delta net 16/16 heads of 128, tied, and its multi-token-prediction layer",
     .nLayer = 24, .nEmbd = 2048, .nFf = 6144, .nHead = 8, .nHeadKv = 2, .headDim = 256, .ropeBase = 10000000.0f,
     .rmsEps = 1e-6f, .ctx = 262144, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .windowPattern = 4, .nRot = 64, .qwen35 = true, .ssmHead = 128, .ssmHeadsK = 16,
     .ssmHeadsV = 16, .nextn = 1},
    {.name = "qwen35-35b-a3b", .arch = "qwen35moe",
     .description = "Qwen3.5-35B-A3B shape: 40 layers (3:1), 2048, 16/2 heads of 256, delta net 16/32 heads of 128, "
                    "256 experts of 512, 8 per token, shared expert of 512, and its multi-token-prediction layer",
     .nLayer = 40, .nEmbd = 2048, .nFf = 512, .nHead = 16, .nHeadKv = 2, .headDim = 256, .ropeBase = 10000000.0f,
     .rmsEps = 1e-6f, .ctx = 262144, .tied = false, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .windowPattern = 4, .nExpert = 256, .nUsed = 8, .nFfExpert = 512, .nRot = 64,
     .qwen35 = true, .ssmHead = 128, .ssmHeadsK = 16, .ssmHeadsV = 32, .nFfShared = 512, .nextn = 1},
    {.name = "bert-tiny", .arch = "bert",
     .description = "bert (as BGE files are), 3 layers, 256 wide, 4 heads of 64, feed-forward 512, 512 positions, "
                    "CLS pooling (embeddings only)",
     .nLayer = 3, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 4, .headDim = 64, .ropeBase = 10000.0f,
     .rmsEps = 1e-12f, .ctx = 512, .tied = true, .qkvBias = true, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false, .bert = true},
    {.name = "bert-rerank-tiny", .arch = "bert",
     .description = "bert reranker (as bge-reranker files are): bert-tiny with a classification head and rank pooling",
     .nLayer = 3, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 4, .headDim = 64, .ropeBase = 10000.0f,
     .rmsEps = 1e-12f, .ctx = 512, .tied = true, .qkvBias = true, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false, .bert = true, .rank = true},
    {.name = "qwen3-rerank-tiny", .arch = "qwen3",
     .description = "qwen3 reranker (as Qwen3-Reranker files are): qwen3-tiny with the yes / no head (cls.output), "
                    "rank pooling and the rerank prompt (tokenizer.chat_template.rerank)",
     .nLayer = 2, .nEmbd = 256, .nFf = 768, .nHead = 4, .nHeadKv = 2, .headDim = 64, .ropeBase = 1000000.0f,
     .rmsEps = 1e-6f, .ctx = 4096, .tied = true, .qkvBias = false, .qkNorm = true, .llama3Rope = false,
     .writeHeadDims = true, .rank = true},
    {.name = "nomic-bert-tiny", .arch = "nomic-bert",
     .description = "nomic-bert (as nomic-embed-text files are), 3 layers, 256 wide, 4 heads of 64, SwiGLU 512, "
                    "RoPE base 1000, 2048 context, mean pooling (embeddings only)",
     .nLayer = 3, .nEmbd = 256, .nFf = 512, .nHead = 4, .nHeadKv = 4, .headDim = 64, .ropeBase = 1000.0f,
     .rmsEps = 1e-12f, .ctx = 2048, .tied = true, .qkvBias = false, .qkNorm = false, .llama3Rope = false,
     .writeHeadDims = false, .bert = true, .nomic = true},
};

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
    t.push_back({"output_norm.weight", {E}, TensorPlan::Ones});
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
    for (const Shape& s : kShapes) out.push_back({s.name, s.description});
    return out;
}

Status synthesizeModel(const SynthOptions& o) {
    const Shape* found = nullptr;
    for (const Shape& s : kShapes)
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
