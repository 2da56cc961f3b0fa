// The portable matMul level: dequantize each weight row once, then float dot products with every
// activation row. Runs on any CPU; also the oracle-like baseline the SIMD levels are timed against.
#include "backend/cpu/matmul_kernels.h"

#include <algorithm>

namespace hearth::cpu::kernels {

namespace {

// Dot product with 8 independent partial sums (lets the compiler use SSE lanes).
float dot(const float* a, const float* b, int64_t n) {
    float s[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += a[i + k] * b[i + k];
    for (; i < n; ++i) s[0] += a[i] * b[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

ActKind actKindScalar(quant::Type) { return ActKind::Float; }

void rowsScalar(const Job& job, int64_t r0, int64_t r1) {
    const int64_t cols = job.cols;
    float* buf = static_cast<float*>(threadScratch(size_t(4 * cols) * sizeof(float)));
    for (int64_t r = r0; r < r1; r += 4) {
        const int nr = int(std::min<int64_t>(4, r1 - r));
        const float* wr[4] = {};
        for (int i = 0; i < nr; ++i) {
            if (job.type == quant::Type::F32) {
                wr[i] = reinterpret_cast<const float*>(job.w + uint64_t(r + i) * job.rowBytes);
            } else {
                dequantizeWeightRow(job, r + i, buf + i * cols);
                wr[i] = buf + i * cols;
            }
        }
        for (int64_t j = 0; j < job.n; ++j)
            for (int i = 0; i < nr; ++i)
                job.y[j * job.rows + r + i] = dot(wr[i], job.x + j * cols, cols);
    }
}

} // namespace

const IsaKernels& scalarKernels() {
    static const IsaKernels k{&actKindScalar, &rowsScalar};
    return k;
}

} // namespace hearth::cpu::kernels
