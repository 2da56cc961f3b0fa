// The scalar reference operators of the forward pass, written to be obviously right: they are the
// oracle every optimized CPU, Vulkan and CUDA kernel is tested against.
#pragma once

#include "hearth/quant.h"
#include "hearth/status.h"

#include <cstdint>
#include <span>

namespace hearth::cpu::ref {

// A 2-D weight as GGUF stores it: rows of `cols` elements of `type`, `rows` of them.
// Shape comment convention: W[rows][cols] with cols = ne0 (the contiguous dimension).
struct Matrix {
    const uint8_t* data = nullptr;
    quant::Type type = quant::Type::F32;
    int64_t cols = 0; // ne0
    int64_t rows = 0; // ne1
    uint64_t rowBytes = 0;
};

// y[rows] = W[rows][cols] · x[cols], dequantizing each row on the fly (double accumulation).
Status matVec(const Matrix& w, const float* x, float* y);

// One row of W as floats (for embedding lookup): out[cols] = W[row].
Status getRow(const Matrix& w, int64_t row, float* out);

// out[n] = x[n] / sqrt(mean(x²) + eps) * weight[n]
void rmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps);

// Rotates one head of `headDim` values in place at `pos`. Only the first `nRot` dims rotate.
// Normal pairing rotates (x[2i], x[2i+1]); NeoX pairing rotates (x[i], x[i + nRot/2]).
// freqFactors (nRot/2 values or empty) divide each pair's angle (llama3 rope_freqs).
void rope(float* x, int64_t headDim, int64_t nRot, int64_t pos, float freqBase, bool neox,
          std::span<const float> freqFactors = {});

// In-place softmax over n values.
void softmax(float* x, int64_t n);

// out[n] = silu(gate[n]) * up[n], silu(v) = v / (1 + e^-v)
void swiglu(const float* gate, const float* up, float* out, int64_t n);

// gelu(v) = 0.5 v (1 + tanh(√(2/π) (v + 0.044715 v³))), the tanh form ggml and Gemma use.
float gelu(float v);
// out[n] = gelu(gate[n]) * up[n]
void geglu(const float* gate, const float* up, float* out, int64_t n);

// out[n] = (x - mean) / sqrt(var + eps) * weight + bias (weight, bias may be null)
void layerNorm(const float* x, const float* weight, const float* bias, float* out, int64_t n, float eps);

} // namespace hearth::cpu::ref
