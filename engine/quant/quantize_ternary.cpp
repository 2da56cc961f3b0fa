// Quantizers of the ternary formats TQ1_0 and TQ2_0: each value rounded to -1, 0 or +1 times the
// block's largest magnitude, packed as ggml packs them (no importance: ggml's take none either).
#include "quant/blocks_iq.h"
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>

namespace hearth::quant::detail {

namespace {

// The block's scale (its largest magnitude) and its inverse (0 for an all-zero block).
float ternaryScale(const float* x, float* inverse) {
    float amax = 0.0f;
    for (int j = 0; j < kQKK; ++j) amax = std::max(amax, std::fabs(x[j]));
    *inverse = amax != 0.0f ? 1.0f / amax : 0.0f;
    return amax;
}

// -1/0/+1 as 0/1/2: x / d rounded half away from zero.
int trit(float x, float inverse) {
    const float v = x * inverse;
    if (!(std::fabs(v) < 2.0f)) return v > 0.0f ? 2 : v < 0.0f ? 0 : 1; // non-finite input
    return int(std::lround(v)) + 1;
}

// `count` trits, the first most significant, as one byte: the base-3 number scaled to 0..255
// by a ceiling division (the dequantizer reads digit n as the top trit of q * 3^n).
uint8_t packTrits(const int* t, int count, int pad) {
    int q = 0;
    for (int i = 0; i < count; ++i) q = q * 3 + t[i];
    for (int i = 0; i < pad; ++i) q *= 3;
    q &= 255; // the reference accumulates in a byte (3^5 - 1 = 242 fits)
    return uint8_t((q * 256 + 242) / 243);
}

} // namespace

void quantizeTQ1_0(const float* x, BlockTQ1_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
        float inv;
        y[b].d = floatToHalf(ternaryScale(x, &inv));
        int t[5];
        // Bytes 0-31: values 32n+m; bytes 32-47: values 160+16n+m; qh: values 240+4n+j.
        for (int m = 0; m < 32; ++m) {
            for (int k = 0; k < 5; ++k) t[k] = trit(x[m + 32 * k], inv);
            y[b].qs[m] = packTrits(t, 5, 0);
        }
        for (int m = 0; m < 16; ++m) {
            for (int k = 0; k < 5; ++k) t[k] = trit(x[160 + m + 16 * k], inv);
            y[b].qs[32 + m] = packTrits(t, 5, 0);
        }
        for (int j = 0; j < 4; ++j) {
            for (int k = 0; k < 4; ++k) t[k] = trit(x[240 + j + 4 * k], inv);
            y[b].qh[j] = packTrits(t, 4, 1);
        }
    }
}

void quantizeTQ2_0(const float* x, BlockTQ2_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
        float inv;
        y[b].d = floatToHalf(ternaryScale(x, &inv));
        // Byte m of half h: values 128h + 32l + m at bits 2l..2l+1.
        for (int h = 0; h < 2; ++h)
            for (int m = 0; m < 32; ++m) {
                int q = 0;
                for (int l = 0; l < 4; ++l) q |= (trit(x[128 * h + 32 * l + m], inv) & 3) << 2 * l;
                y[b].qs[32 * h + m] = uint8_t(q);
            }
    }
}

} // namespace hearth::quant::detail
