// Scalar reference operators: plain loops, double accumulation where sums are long.
#include "backend/cpu/ref_ops.h"

#include <cmath>
#include <vector>

namespace hearth::cpu::ref {

Status matVec(const Matrix& w, const float* x, float* y) {
    std::vector<float> row(static_cast<size_t>(w.cols));
    for (int64_t r = 0; r < w.rows; ++r) {
        HEARTH_RETURN_IF_ERROR(
            quant::dequantizeRow(w.type, w.data + uint64_t(r) * w.rowBytes, row.data(), w.cols));
        double acc = 0.0;
        for (int64_t c = 0; c < w.cols; ++c) acc += double(row[size_t(c)]) * double(x[c]);
        y[r] = float(acc);
    }
    return Status::ok();
}

Status getRow(const Matrix& w, int64_t row, float* out) {
    if (row < 0 || row >= w.rows)
        return outOfRange("row " + std::to_string(row) + " outside [0, " +
                          std::to_string(w.rows) + ")");
    return quant::dequantizeRow(w.type, w.data + uint64_t(row) * w.rowBytes, out, w.cols);
}

void rmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
    const float scale = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void rope(float* x, int64_t headDim, int64_t nRot, int64_t pos, float freqBase, bool neox,
          std::span<const float> freqFactors) {
    if (nRot > headDim) nRot = headDim;
    const int64_t half = nRot / 2;
    for (int64_t i = 0; i < half; ++i) {
        // theta_i = pos * base^(-2i / nRot)
        double theta = double(pos) * std::pow(double(freqBase), -2.0 * double(i) / double(nRot));
        if (size_t(i) < freqFactors.size()) theta /= double(freqFactors[size_t(i)]);
        const double c = std::cos(theta), s = std::sin(theta);
        const int64_t a = neox ? i : 2 * i;
        const int64_t b = neox ? i + half : 2 * i + 1;
        const double x0 = x[a], x1 = x[b];
        x[a] = float(x0 * c - x1 * s);
        x[b] = float(x0 * s + x1 * c);
    }
}

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    float maxv = x[0];
    for (int64_t i = 1; i < n; ++i) maxv = std::max(maxv, x[i]);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - maxv));
    for (int64_t i = 0; i < n; ++i) x[i] = float(x[i] / sum);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

float gelu(float v) {
    const double x = v;
    return float(0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = gelu(gate[i]) * up[i];
}

void layerNorm(const float* x, const float* weight, const float* bias, float* out, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    const double mean = sum / double(n);
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
    const double inv = 1.0 / std::sqrt(ss / double(n) + double(eps));
    for (int64_t i = 0; i < n; ++i) {
        double v = (x[i] - mean) * inv;
        if (weight) v *= weight[i];
        if (bias) v += bias[i];
        out[i] = float(v);
    }
}

} // namespace hearth::cpu::ref
