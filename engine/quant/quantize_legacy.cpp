// Reference quantizers for the 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

// The value of largest magnitude, with its sign (0 for an all-zero or non-finite block).
float signedMax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        if (a > amax && std::isfinite(a)) {
            amax = a;
            max = x[i];
        }
    }
    return max;
}

void minMax(const float* x, int n, float& lo, float& hi) {
    lo = std::numeric_limits<float>::max();
    hi = -std::numeric_limits<float>::max();
    for (int i = 0; i < n; ++i) {
        if (!std::isfinite(x[i])) continue;
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    if (lo > hi) lo = hi = 0.0f;
}

// Truncating conversion of an already offset value, clamped to [0, top].
inline int clampTrunc(float v, int top) {
    if (!(v == v)) return 0;
    v = std::min(std::max(v, 0.0f), float(top));
    return std::min(top, int(v));
}

void storeQh(uint8_t* qh, uint32_t bits) {
    for (int i = 0; i < 4; ++i) qh[i] = uint8_t(bits >> (8 * i));
}

} // namespace

void quantizeQ4_0(const float* x, BlockQ4_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float max = signedMax(x, kQK);
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = floatToHalf(d);
        for (int j = 0; j < kQK / 2; ++j) {
            const int lo = clampTrunc(x[j] * id + 8.5f, 15);
            const int hi = clampTrunc(x[j + kQK / 2] * id + 8.5f, 15);
            y[b].qs[j] = uint8_t(lo | hi << 4);
        }
    }
}

void quantizeQ4_1(const float* x, BlockQ4_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float lo, hi;
        minMax(x, kQK, lo, hi);
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = floatToHalf(d);
        y[b].m = floatToHalf(lo);
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = clampTrunc((x[j] - lo) * id + 0.5f, 15);
            const int q1 = clampTrunc((x[j + kQK / 2] - lo) * id + 0.5f, 15);
            y[b].qs[j] = uint8_t(q0 | q1 << 4);
        }
    }
}

void quantizeQ5_0(const float* x, BlockQ5_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float max = signedMax(x, kQK);
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = floatToHalf(d);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = clampTrunc(x[j] * id + 16.5f, 31);
            const int q1 = clampTrunc(x[j + kQK / 2] * id + 16.5f, 31);
            y[b].qs[j] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= uint32_t(q0 >> 4) << j;
            qh |= uint32_t(q1 >> 4) << (j + kQK / 2);
        }
        storeQh(y[b].qh, qh);
    }
}

void quantizeQ5_1(const float* x, BlockQ5_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float lo, hi;
        minMax(x, kQK, lo, hi);
        const float d = (hi - lo) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = floatToHalf(d);
        y[b].m = floatToHalf(lo);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const int q0 = clampTrunc((x[j] - lo) * id + 0.5f, 31);
            const int q1 = clampTrunc((x[j + kQK / 2] - lo) * id + 0.5f, 31);
            y[b].qs[j] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= uint32_t(q0 >> 4) << j;
            qh |= uint32_t(q1 >> 4) << (j + kQK / 2);
        }
        storeQh(y[b].qh, qh);
    }
}

void quantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float amax = std::fabs(signedMax(x, kQK));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = floatToHalf(d);
        for (int j = 0; j < kQK; ++j)
            y[b].qs[j] = int8_t(std::clamp(roundToInt(x[j] * id), -127, 127));
    }
}

void quantizeQ8_1(const float* x, BlockQ8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float amax = std::fabs(signedMax(x, kQK));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            y[b].qs[j] = int8_t(std::clamp(roundToInt(x[j] * id), -127, 127));
            sum += y[b].qs[j];
        }
        y[b].d = floatToHalf(d);
        y[b].s = floatToHalf(float(sum) * d);
    }
}

} // namespace hearth::quant::detail
