// Public entry points for converting rows between float and every supported tensor type.
#include "hearth/quant.h"
#include "quant/blocks_iq.h"
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace hearth::quant {

namespace {

template <typename Block> void dequantBlocks(const void* src, float* dst, int64_t nBlocks,
                                             int blockElems) {
    const auto* b = static_cast<const Block*>(src);
    for (int64_t i = 0; i < nBlocks; ++i) dequantBlock(b[i], dst + i * blockElems);
}

Status checkRow(Type t, int64_t n, bool quantize, const TypeInfo*& info) {
    info = typeInfo(t);
    if (!info) return unsupported("unknown tensor type id " + std::to_string(uint32_t(t)));
    if (quantize ? !info->canQuantize : !info->canDequantize)
        return unsupported(std::string(quantize ? "quantizing to " : "dequantizing ") +
                           std::string(info->name) + " is not supported");
    if (n < 0 || n % info->blockElems != 0)
        return invalidArgument("row of " + std::to_string(n) + " elements is not a multiple of " +
                               std::string(info->name) + "'s block of " +
                               std::to_string(info->blockElems));
    return Status::ok();
}

} // namespace

Status dequantizeRow(Type t, const void* src, float* dst, int64_t n) {
    const TypeInfo* info = nullptr;
    HEARTH_RETURN_IF_ERROR(checkRow(t, n, false, info));
    const int64_t nb = n / info->blockElems;
    switch (t) {
    case Type::F32: std::memcpy(dst, src, size_t(n) * 4); break;
    case Type::F16: {
        const auto* h = static_cast<const uint16_t*>(src);
        for (int64_t i = 0; i < n; ++i) dst[i] = halfToFloat(h[i]);
        break;
    }
    case Type::BF16: {
        const auto* h = static_cast<const uint16_t*>(src);
        for (int64_t i = 0; i < n; ++i) dst[i] = bf16ToFloat(h[i]);
        break;
    }
    case Type::Q4_0: dequantBlocks<BlockQ4_0>(src, dst, nb, kQK); break;
    case Type::Q4_1: dequantBlocks<BlockQ4_1>(src, dst, nb, kQK); break;
    case Type::Q5_0: dequantBlocks<BlockQ5_0>(src, dst, nb, kQK); break;
    case Type::Q5_1: dequantBlocks<BlockQ5_1>(src, dst, nb, kQK); break;
    case Type::Q8_0: dequantBlocks<BlockQ8_0>(src, dst, nb, kQK); break;
    case Type::Q8_1: dequantBlocks<BlockQ8_1>(src, dst, nb, kQK); break;
    case Type::Q2_K: dequantBlocks<BlockQ2_K>(src, dst, nb, kQKK); break;
    case Type::Q3_K: dequantBlocks<BlockQ3_K>(src, dst, nb, kQKK); break;
    case Type::Q4_K: dequantBlocks<BlockQ4_K>(src, dst, nb, kQKK); break;
    case Type::Q5_K: dequantBlocks<BlockQ5_K>(src, dst, nb, kQKK); break;
    case Type::Q6_K: dequantBlocks<BlockQ6_K>(src, dst, nb, kQKK); break;
    case Type::Q8_K: dequantBlocks<BlockQ8_K>(src, dst, nb, kQKK); break;
    case Type::IQ4_NL: dequantBlocks<BlockIQ4_NL>(src, dst, nb, kQK); break;
    case Type::IQ4_XS: dequantBlocks<BlockIQ4_XS>(src, dst, nb, kQKK); break;
    case Type::MXFP4: dequantBlocks<BlockMXFP4>(src, dst, nb, kQK); break;
    case Type::IQ2_XXS: dequantBlocks<BlockIQ2_XXS>(src, dst, nb, kQKK); break;
    case Type::IQ2_XS: dequantBlocks<BlockIQ2_XS>(src, dst, nb, kQKK); break;
    case Type::IQ2_S: dequantBlocks<BlockIQ2_S>(src, dst, nb, kQKK); break;
    case Type::IQ3_XXS: dequantBlocks<BlockIQ3_XXS>(src, dst, nb, kQKK); break;
    case Type::IQ3_S: dequantBlocks<BlockIQ3_S>(src, dst, nb, kQKK); break;
    case Type::IQ1_S: dequantBlocks<BlockIQ1_S>(src, dst, nb, kQKK); break;
    case Type::IQ1_M: dequantBlocks<BlockIQ1_M>(src, dst, nb, kQKK); break;
    case Type::TQ1_0: dequantBlocks<BlockTQ1_0>(src, dst, nb, kQKK); break;
    case Type::TQ2_0: dequantBlocks<BlockTQ2_0>(src, dst, nb, kQKK); break;
    default: return unsupported("dequantizing " + std::string(info->name) + " is not supported");
    }
    return Status::ok();
}

Status quantizeRow(Type t, const float* src, void* dst, int64_t n) {
    const TypeInfo* info = nullptr;
    HEARTH_RETURN_IF_ERROR(checkRow(t, n, true, info));
    using namespace detail;
    // The grid and ternary searches assume finite input: a row with NaN or infinity is quantized
    // with those values as 0.
    std::vector<float> finite;
    if (t == Type::TQ1_0 || t == Type::TQ2_0 || t == Type::IQ3_XXS || t == Type::IQ3_S || t == Type::IQ2_S ||
        t == Type::IQ1_M) {
        if (!std::all_of(src, src + n, [](float v) { return std::isfinite(v); })) {
            finite.assign(src, src + n);
            for (float& v : finite)
                if (!std::isfinite(v)) v = 0.0f;
            src = finite.data();
        }
    }
    switch (t) {
    case Type::F32: std::memcpy(dst, src, size_t(n) * 4); break;
    case Type::F16: {
        auto* h = static_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) h[i] = floatToHalf(src[i]);
        break;
    }
    case Type::BF16: {
        auto* h = static_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) h[i] = floatToBf16(src[i]);
        break;
    }
    case Type::Q4_0: quantizeQ4_0(src, static_cast<BlockQ4_0*>(dst), n); break;
    case Type::Q4_1: quantizeQ4_1(src, static_cast<BlockQ4_1*>(dst), n); break;
    case Type::Q5_0: quantizeQ5_0(src, static_cast<BlockQ5_0*>(dst), n); break;
    case Type::Q5_1: quantizeQ5_1(src, static_cast<BlockQ5_1*>(dst), n); break;
    case Type::Q8_0: quantizeQ8_0(src, static_cast<BlockQ8_0*>(dst), n); break;
    case Type::Q8_1: quantizeQ8_1(src, static_cast<BlockQ8_1*>(dst), n); break;
    case Type::Q2_K: quantizeQ2_K(src, static_cast<BlockQ2_K*>(dst), n); break;
    case Type::Q3_K: quantizeQ3_K(src, static_cast<BlockQ3_K*>(dst), n); break;
    case Type::Q4_K: quantizeQ4_K(src, static_cast<BlockQ4_K*>(dst), n); break;
    case Type::Q5_K: quantizeQ5_K(src, static_cast<BlockQ5_K*>(dst), n); break;
    case Type::Q6_K: quantizeQ6_K(src, static_cast<BlockQ6_K*>(dst), n); break;
    case Type::Q8_K: quantizeQ8_K(src, static_cast<BlockQ8_K*>(dst), n); break;
    case Type::IQ4_NL: quantizeIQ4_NL(src, static_cast<BlockIQ4_NL*>(dst), n); break;
    case Type::IQ4_XS: quantizeIQ4_XS(src, static_cast<BlockIQ4_XS*>(dst), n); break;
    case Type::MXFP4: quantizeMXFP4(src, static_cast<BlockMXFP4*>(dst), n); break;
    case Type::TQ1_0: quantizeTQ1_0(src, static_cast<BlockTQ1_0*>(dst), n); break;
    case Type::TQ2_0: quantizeTQ2_0(src, static_cast<BlockTQ2_0*>(dst), n); break;
    case Type::IQ3_XXS: iq3XxsRows(src, static_cast<BlockIQ3_XXS*>(dst), n, nullptr); break;
    case Type::IQ3_S: iq3SRows(src, static_cast<BlockIQ3_S*>(dst), n, nullptr); break;
    case Type::IQ2_S: iq2SRows(src, static_cast<BlockIQ2_S*>(dst), n, nullptr); break;
    case Type::IQ1_M: iq1MRows(src, static_cast<BlockIQ1_M*>(dst), n, nullptr); break;
    default: return unsupported("quantizing to " + std::string(info->name) + " is not supported");
    }
    return Status::ok();
}

Status quantizeRows(Type t, const float* src, void* dst, int64_t nRows, int64_t rowLen,
                    int threads) {
    HEARTH_ASSIGN_OR_RETURN(uint64_t rb, rowBytes(t, uint64_t(std::max<int64_t>(rowLen, 0))));
    if (nRows < 0) return invalidArgument("negative row count");
    auto* out = static_cast<uint8_t*>(dst);
    const int n = std::max(1, std::min<int>(threads, int(std::min<int64_t>(nRows, 64))));
    if (n == 1) {
        for (int64_t r = 0; r < nRows; ++r)
            HEARTH_RETURN_IF_ERROR(quantizeRow(t, src + r * rowLen, out + uint64_t(r) * rb, rowLen));
        return Status::ok();
    }
    std::vector<Status> results(static_cast<size_t>(n));
    std::vector<std::thread> pool;
    for (int w = 0; w < n; ++w) {
        pool.emplace_back([&, w] {
            const int64_t begin = nRows * w / n, end = nRows * (w + 1) / n;
            for (int64_t r = begin; r < end; ++r) {
                Status s = quantizeRow(t, src + r * rowLen, out + uint64_t(r) * rb, rowLen);
                if (!s.isOk()) {
                    results[size_t(w)] = s;
                    return;
                }
            }
        });
    }
    for (std::thread& th : pool) th.join();
    for (const Status& s : results) HEARTH_RETURN_IF_ERROR(s);
    return Status::ok();
}

} // namespace hearth::quant
