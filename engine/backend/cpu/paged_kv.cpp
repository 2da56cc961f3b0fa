// CPU paged K/V storage in F32, F16 or Q8_0.
#include "backend/cpu/paged_kv.h"

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/quantizers.h"

#include <algorithm>
#include <cstring>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace hearth::cpu {

namespace {

// Every binary16 value as a float: reading an F16 cache is then one load per value.
const float* halfTable() {
    static const std::vector<float> table = [] {
        std::vector<float> t(65536);
        for (uint32_t h = 0; h < 65536; ++h) t[h] = quant::halfToFloat(uint16_t(h));
        return t;
    }();
    return table.data();
}

// out[i] = the binary16 value at src + 2i, for i < n (exact either way).
void halfsToFloats(const uint8_t* src, float* out, int64_t n) {
    const float* table = halfTable();
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = table[h];
    }
}

// dst + 2i = binary16 of in[i], rounded to nearest even (NaN quieted, payload's top bits kept).
void floatsToHalfs(const float* in, uint8_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = quant::floatToHalf(in[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,f16c"))) void floatsToHalfsF16c(const float* in, uint8_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (i < n) floatsToHalfs(in + i, dst + 2 * i, n - i);
}
#endif

// AVX2 + FMA + F16C, from CPUID (x86-64 only; the scalar conversions otherwise).
bool hasF16c() {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool yes = isaSupported(Isa::Avx2);
    return yes;
#else
    return false;
#endif
}

void storeHalfs(const float* in, uint8_t* dst, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (hasF16c()) return floatsToHalfsF16c(in, dst, n);
#endif
    floatsToHalfs(in, dst, n);
}

// Attention over a long F16 history spends most of its time here: the F16C row kernel of the
// AVX2 matMul when the CPU has it.
void convertHalfs(const uint8_t* src, float* out, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (hasF16c()) return kernels::f16RowAvx2(reinterpret_cast<const uint16_t*>(src), out, n);
#endif
    halfsToFloats(src, out, n);
}

} // namespace

uint64_t PagedKvStore::rowBytes(int64_t rowSize, KvType type) {
    switch (type) {
    case KvType::F32: return uint64_t(rowSize) * 4;
    case KvType::F16: return uint64_t(rowSize) * 2;
    case KvType::Q8_0: return uint64_t(rowSize) / quant::kQK * sizeof(quant::BlockQ8_0);
    }
    return 0;
}

Result<PagedKvStore> PagedKvStore::create(int nLayers, int numBlocks, int blockSize, int nKvHeads,
                                          int headDim, KvType type) {
    if (nLayers < 1 || numBlocks < 1 || blockSize < 1 || nKvHeads < 1 || headDim < 1)
        return invalidArgument("KV store dimensions must be positive");
    const int64_t rowSize = int64_t(nKvHeads) * headDim;
    if (type == KvType::Q8_0 && rowSize % quant::kQK != 0)
        return unsupported("a q8_0 KV cache needs K/V rows of a multiple of 32 values; this model's are " +
                           std::to_string(rowSize) + " (use f16)");
    PagedKvStore s;
    HEARTH_RETURN_IF_ERROR(s.init(nLayers, numBlocks, blockSize, nKvHeads, headDim, type));
    return s;
}

PagedKvStore::PagedKvStore(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim) {
    if (!init(nLayers, numBlocks, blockSize, nKvHeads, headDim, KvType::F32).isOk()) m_layers = 0;
}

Status PagedKvStore::init(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim,
                          KvType type) {
    m_numBlocks = numBlocks;
    m_blockSize = blockSize;
    m_rowSize = int64_t(nKvHeads) * headDim;
    m_headDim = headDim;
    m_type = type;
    m_rowBytes = rowBytes(m_rowSize, type);
    const uint64_t bytes = uint64_t(nLayers) * uint64_t(numBlocks) * uint64_t(blockSize) * m_rowBytes;
    m_k = ZeroedMemory(size_t(bytes));
    m_v = ZeroedMemory(size_t(bytes));
    if (!m_k.ok() || !m_v.ok()) {
        m_k = ZeroedMemory();
        m_v = ZeroedMemory();
        return outOfMemory("cannot allocate the K/V cache (" + std::to_string(2 * bytes >> 20) + " MiB)");
    }
    m_layers = nLayers;
    return Status::ok();
}

void PagedKvStore::write(uint8_t* base, bool value, int layer, int64_t slot, const float* row) {
    const int64_t B = m_blockSize, D = m_headDim, o = slot % B;
    uint8_t* block = base + blockOffset(layer, slot / B);
    switch (m_type) {
    case KvType::Q8_0: {
        uint8_t* p = block + uint64_t(o) * m_rowBytes;
        quant::BlockQ8_0 blocks[64];
        for (int64_t off = 0; off < m_rowSize; off += 64 * quant::kQK) {
            const int64_t n = std::min<int64_t>(64 * quant::kQK, m_rowSize - off);
            quant::detail::quantizeQ8_0(row + off, blocks, n);
            std::memcpy(p + off / quant::kQK * sizeof(quant::BlockQ8_0), blocks,
                        size_t(n / quant::kQK) * sizeof(quant::BlockQ8_0));
        }
        return;
    }
    case KvType::F32:
    case KvType::F16: break;
    }
    const int64_t e = m_type == KvType::F32 ? 4 : 2;
    if (value) { // V: each head's D values are contiguous at [head][o]
        for (int64_t h = 0; h < m_rowSize / D; ++h) {
            uint8_t* p = block + uint64_t((h * B + o) * D * e);
            if (e == 4) std::memcpy(p, row + h * D, size_t(D) * 4);
            else storeHalfs(row + h * D, p, D);
        }
        return;
    }
    // K: value d of head h goes to [h][d][o], a stride of B elements; converted in runs first.
    constexpr int64_t kRun = 256;
    uint8_t run[kRun * 4];
    for (int64_t c0 = 0; c0 < m_rowSize; c0 += kRun) {
        const int64_t n = std::min(kRun, m_rowSize - c0);
        if (e == 4) std::memcpy(run, row + c0, size_t(n) * 4);
        else storeHalfs(row + c0, run, n);
        for (int64_t j = 0; j < n; ++j) // column c = h * D + d lands at (c * B + o) elements
            std::memcpy(block + uint64_t(((c0 + j) * B + o) * e), run + j * e, size_t(e));
    }
}

void PagedKvStore::read(const uint8_t* base, bool value, int layer, int64_t slot, int64_t first,
                        int64_t count, float* out) const {
    const int64_t B = m_blockSize, D = m_headDim, o = slot % B;
    const uint8_t* block = base + blockOffset(layer, slot / B);
    switch (m_type) {
    case KvType::Q8_0: {
        const uint8_t* p = block + uint64_t(o) * m_rowBytes;
        for (int64_t b = first / quant::kQK; b < (first + count) / quant::kQK; ++b) {
            quant::BlockQ8_0 q;
            std::memcpy(&q, p + b * int64_t(sizeof q), sizeof q);
            quant::dequantBlock(q, out + b * quant::kQK - first);
        }
        return;
    }
    case KvType::F32:
    case KvType::F16: break;
    }
    const int64_t e = m_type == KvType::F32 ? 4 : 2;
    if (value) { // runs of one head at a time
        for (int64_t c = first; c < first + count;) {
            const int64_t h = c / D, d = c % D, n = std::min(D - d, first + count - c);
            const uint8_t* p = block + uint64_t(((h * B + o) * D + d) * e);
            if (e == 4) std::memcpy(out + (c - first), p, size_t(n) * 4);
            else convertHalfs(p, out + (c - first), n);
            c += n;
        }
        return;
    }
    for (int64_t c = first; c < first + count; ++c) { // K: one value every B elements
        const uint8_t* p = block + uint64_t((c * B + o) * e);
        if (e == 4) {
            std::memcpy(out + (c - first), p, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, p, 2);
            out[c - first] = quant::halfToFloat(h);
        }
    }
}

void PagedKvStore::writeKey(int layer, int64_t slot, const float* row) { write(m_k.data(), false, layer, slot, row); }
void PagedKvStore::writeValue(int layer, int64_t slot, const float* row) { write(m_v.data(), true, layer, slot, row); }
void PagedKvStore::readKey(int layer, int64_t slot, float* row) const { read(m_k.data(), false, layer, slot, 0, m_rowSize, row); }
void PagedKvStore::readValue(int layer, int64_t slot, float* row) const { read(m_v.data(), true, layer, slot, 0, m_rowSize, row); }
void PagedKvStore::readKeyPart(int layer, int64_t slot, int64_t first, int64_t count, float* out) const {
    read(m_k.data(), false, layer, slot, first, count, out);
}
void PagedKvStore::readValuePart(int layer, int64_t slot, int64_t first, int64_t count, float* out) const {
    read(m_v.data(), true, layer, slot, first, count, out);
}

void PagedKvStore::readBlockHead(int layer, int32_t block, int64_t kvHead, float* kT, float* v) const {
    const int64_t n = int64_t(m_blockSize) * m_headDim; // values of one head in one block
    const uint64_t at = blockOffset(layer, block) + uint64_t(kvHead * n) * (m_type == KvType::F32 ? 4 : 2);
    if (m_type == KvType::F32) {
        std::memcpy(kT, m_k.data() + at, size_t(n) * 4);
        std::memcpy(v, m_v.data() + at, size_t(n) * 4);
    } else if (m_type == KvType::F16) {
        convertHalfs(m_k.data() + at, kT, n);
        convertHalfs(m_v.data() + at, v, n);
    }
}

void PagedKvStore::readBlockHeadRows(int layer, int32_t block, int64_t kvHead, int64_t count, float* kT,
                                     float* v) const {
    if (m_type != KvType::Q8_0) return;
    const int64_t B = m_blockSize, D = m_headDim, Q = quant::kQK;
    const uint64_t at = blockOffset(layer, block);
    const int64_t chunk0 = kvHead * D / Q; // the head's first 32-value block within a row
    for (int64_t o = 0; o < count; ++o) {
        const uint8_t* kr = m_k.data() + at + uint64_t(o) * m_rowBytes;
        const uint8_t* vr = m_v.data() + at + uint64_t(o) * m_rowBytes;
        for (int64_t c = 0; c < D / Q; ++c) { // as quant::dequantBlock: d * q, value by value
            quant::BlockQ8_0 kb, vb;
            std::memcpy(&kb, kr + uint64_t(chunk0 + c) * sizeof kb, sizeof kb);
            std::memcpy(&vb, vr + uint64_t(chunk0 + c) * sizeof vb, sizeof vb);
            const float dk = quant::halfToFloat(kb.d), dv = quant::halfToFloat(vb.d);
            float* vo = v + o * D + c * Q;
            for (int64_t j = 0; j < Q; ++j) vo[j] = dv * float(vb.qs[j]);
            float* kc = kT + c * Q * B + o; // transposed: value j of the chunk at row c * 32 + j
            for (int64_t j = 0; j < Q; ++j) kc[j * B] = dk * float(kb.qs[j]);
        }
    }
}

void PagedKvStore::prefetch(int layer, int32_t block, int64_t kvHead) const {
    const uint8_t* k = m_k.data() + blockOffset(layer, block);
    const uint8_t* v = m_v.data() + blockOffset(layer, block);
    auto lines = [](const uint8_t* p, uint64_t bytes) {
        for (uint64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
        __builtin_prefetch(p + bytes - 1);
    };
    if (headMajor()) { // one contiguous run each
        const uint64_t bytes = uint64_t(m_blockSize * m_headDim) * (m_type == KvType::F32 ? 4 : 2);
        lines(k + uint64_t(kvHead) * bytes, bytes);
        lines(v + uint64_t(kvHead) * bytes, bytes);
        return;
    }
    // Q8_0 rows: this head's slice of each, a row apart (too far for the hardware to follow).
    const uint64_t begin = uint64_t(kvHead * m_headDim) * m_rowBytes / uint64_t(m_rowSize);
    const uint64_t end = uint64_t((kvHead + 1) * m_headDim) * m_rowBytes / uint64_t(m_rowSize);
    for (int64_t o = 0; o < m_blockSize; ++o) {
        lines(k + uint64_t(o) * m_rowBytes + begin, end - begin);
        lines(v + uint64_t(o) * m_rowBytes + begin, end - begin);
    }
}

int64_t PagedKvStore::slotOf(std::span<const int32_t> blockTable, int64_t pos) const {
    if (pos < 0) return -1;
    const int64_t index = pos / m_blockSize;
    if (index >= int64_t(blockTable.size())) return -1;
    const int32_t block = blockTable[size_t(index)];
    if (block < 0 || block >= m_numBlocks) return -1;
    return int64_t(block) * m_blockSize + pos % m_blockSize;
}

void PagedKvStore::copyBlock(int32_t src, int32_t dst) {
    const size_t n = size_t(uint64_t(m_blockSize) * m_rowBytes);
    for (int l = 0; l < m_layers; ++l) {
        std::memcpy(m_k.data() + blockOffset(l, dst), m_k.data() + blockOffset(l, src), n);
        std::memcpy(m_v.data() + blockOffset(l, dst), m_v.data() + blockOffset(l, src), n);
    }
}

uint64_t PagedKvStore::bytes() const { return uint64_t(m_k.size()) + uint64_t(m_v.size()); }

} // namespace hearth::cpu
