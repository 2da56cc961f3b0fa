// Repacking of Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4/Q4_K/Q5_K/Q6_K/IQ4_XS weight matrices into the 16-row interleaved layout
// (repack.h), the matMul driver over repacked weights (activation quantization, split of row
// groups over the pool) and the per-model set of repacked copies. Compiled for plain x86-64.
#include "backend/cpu/repack.h"

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/page_release.h"
#include "backend/cpu/thread_pool.h"
#include "quant/blocks.h"

#include <algorithm>
#include <type_traits>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hearth::cpu {

namespace {

using quant::Type;

// Q4_0 (and IQ4_NL, MXFP4): the 16 nibble bytes of a block, split into 4-byte chunks, row i of the group at bytes
// 4i..4i+3 of chunk k. Q5_0: the same, then the fifth bits as 8 masks over those bytes. Q8_0: the
// 32 values + 128 in 8 chunks.
void packBlock(Type type, const uint8_t* const* src, int nRows, int64_t b, uint8_t* payload,
               uint16_t* scales) {
    uint64_t masks[8] = {}; // Q5_0
    for (int i = 0; i < kPackRows; ++i) {
        if (i >= nRows) {
            if (type != Type::MXFP4) scales[i] = 0; // (MXFP4's bytes are zero already)
            continue;
        }
        if (type == Type::MXFP4) { // Q4_0's nibble order; the scale block holds the 16 exponents
            const auto& blk = reinterpret_cast<const quant::BlockMXFP4*>(src[i])[b];
            reinterpret_cast<uint8_t*>(scales)[i] = blk.e;
            for (int k = 0; k < 4; ++k) std::memcpy(payload + 64 * k + 4 * i, blk.qs + 4 * k, 4);
        } else if (type == Type::IQ4_NL) { // Q4_0's nibble order; the kernel maps each nibble to its level
            const auto& blk = reinterpret_cast<const quant::BlockIQ4_NL*>(src[i])[b];
            scales[i] = blk.d;
            for (int k = 0; k < 4; ++k) std::memcpy(payload + 64 * k + 4 * i, blk.qs + 4 * k, 4);
        } else if (type == Type::Q4_0) {
            const auto& blk = reinterpret_cast<const quant::BlockQ4_0*>(src[i])[b];
            scales[i] = blk.d;
            for (int k = 0; k < 4; ++k) std::memcpy(payload + 64 * k + 4 * i, blk.qs + 4 * k, 4);
        } else if (type == Type::Q5_0) {
            const auto& blk = reinterpret_cast<const quant::BlockQ5_0*>(src[i])[b];
            scales[i] = blk.d;
            for (int k = 0; k < 4; ++k) std::memcpy(payload + 64 * k + 4 * i, blk.qs + 4 * k, 4);
            const uint32_t qh = quant::loadQh(blk.qh);
            for (int v = 0; v < 8; ++v) masks[v] |= uint64_t((qh >> (4 * v)) & 0xf) << (4 * i);
        } else {
            const auto& blk = reinterpret_cast<const quant::BlockQ8_0*>(src[i])[b];
            scales[i] = blk.d;
            for (int k = 0; k < 8; ++k)
                for (int e = 0; e < 4; ++e)
                    payload[64 * k + 4 * i + e] = uint8_t(int(blk.qs[4 * k + e]) + 128);
        }
    }
    if (type == Type::Q5_0) std::memcpy(payload + 256, masks, sizeof masks); // little-endian words
}

// Q4_K (or Q5_K) super-block b of the group's rows (layout in repack.h): nibble chunks, then d,
// dmin, the 6-bit scales as bytes [sub-block][row] and the mins as byte pairs [pair][row][2]
// (Q5_K: then its fifth bits).
template <typename Block> void packBlockQ4K(const uint8_t* const* src, int nRows, int64_t b, uint8_t* out) {
    uint16_t* d = reinterpret_cast<uint16_t*>(out + kQ4KPayload);
    uint16_t* dmin = d + kPackRows;
    uint8_t* sc = out + kQ4KPayload + 4 * kPackRows;
    uint8_t* mn = sc + 8 * kPackRows;
    for (int i = 0; i < nRows; ++i) {
        const auto& blk = reinterpret_cast<const Block*>(src[i])[b];
        if constexpr (std::is_same_v<Block, quant::BlockQ5_K>)
            for (int k = 0; k < 8; ++k) std::memcpy(out + kQ4KBlockBytes + 64 * k + 4 * i, blk.qh + 4 * k, 4);
        for (int c = 0; c < 4; ++c)
            for (int k = 0; k < 8; ++k)
                std::memcpy(out + 64 * (8 * c + k) + 4 * i, blk.qs + 32 * c + 4 * k, 4);
        d[i] = blk.d;
        dmin[i] = blk.dmin;
        for (int j = 0; j < 8; ++j) {
            int s = 0, m = 0;
            quant::k4ScaleMin(blk.scales, j, s, m); // Q5_K packs them as Q4_K
            sc[kPackRows * j + i] = uint8_t(s);
            mn[2 * kPackRows * (j / 2) + 2 * i + (j % 2)] = uint8_t(m);
        }
    }
}

// IQ4_XS super-block b of the group's rows (layout in repack.h): the nibble indices rearranged
// into Q4_K's chunk order, then d and the signed 6-bit scales [sub-block][row].
void packBlockIQ4XS(const uint8_t* const* src, int nRows, int64_t b, uint8_t* out) {
    uint16_t* d = reinterpret_cast<uint16_t*>(out + kQ4KPayload);
    int8_t* sc = reinterpret_cast<int8_t*>(out + kQ4KPayload + 2 * kPackRows);
    for (int i = 0; i < nRows; ++i) {
        const auto& blk = reinterpret_cast<const quant::BlockIQ4_XS*>(src[i])[b];
        uint8_t u[256]; // the nibble of each column
        for (int j = 0; j < 8; ++j)
            for (int l = 0; l < 16; ++l) {
                u[32 * j + l] = blk.qs[16 * j + l] & 0x0f;
                u[32 * j + 16 + l] = blk.qs[16 * j + l] >> 4;
            }
        for (int c = 0; c < 4; ++c)
            for (int k = 0; k < 8; ++k)
                for (int e = 0; e < 4; ++e)
                    out[64 * (8 * c + k) + 4 * i + e] =
                        uint8_t(u[64 * c + 4 * k + e] | u[64 * c + 32 + 4 * k + e] << 4);
        d[i] = blk.d;
        for (int j = 0; j < 8; ++j) sc[kPackRows * j + i] = int8_t(quant::iq4xsScale(blk, j));
    }
}

// Q6_K super-block b of the group's rows (layout in repack.h): u = q + 32 of every column split
// into nibble and high-bit vectors, then the scales [sub-block][row] and d.
void packBlockQ6K(const uint8_t* const* src, int nRows, int64_t b, uint8_t* out) {
    uint8_t* hbits = out + 2048;
    int8_t* sc = reinterpret_cast<int8_t*>(out + 3072);
    uint16_t* d = reinterpret_cast<uint16_t*>(out + 3328);
    for (int i = 0; i < nRows; ++i) {
        const auto& blk = reinterpret_cast<const quant::BlockQ6_K*>(src[i])[b];
        // u[col] from the original's halves (see quant::dequantBlock for Q6_K).
        uint8_t u[256];
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l) {
                const uint8_t ql0 = blk.ql[64 * h + l], ql1 = blk.ql[64 * h + l + 32];
                const uint8_t qh = blk.qh[32 * h + l];
                u[128 * h + l] = uint8_t((ql0 & 0x0f) | ((qh >> 0) & 3) << 4);
                u[128 * h + l + 32] = uint8_t((ql1 & 0x0f) | ((qh >> 2) & 3) << 4);
                u[128 * h + l + 64] = uint8_t((ql0 >> 4) | ((qh >> 4) & 3) << 4);
                u[128 * h + l + 96] = uint8_t((ql1 >> 4) | ((qh >> 6) & 3) << 4);
            }
        for (int col = 0; col < 256; ++col) {
            const int c = col / 4, at = 4 * i + col % 4;
            const uint8_t lo = u[col] & 0x0f, hi = u[col] >> 4;
            out[64 * (c % 32) + at] |= uint8_t(c < 32 ? lo : lo << 4);
            hbits[64 * (c % 16) + at] |= uint8_t(hi << (2 * (c / 16)));
        }
        for (int j = 0; j < 16; ++j) sc[kPackRows * j + i] = blk.scales[j];
        d[i] = blk.d;
    }
}

// Q4_K, Q5_K, Q6_K and IQ4_XS come in super-blocks of 256 columns (and take activations in
// blocks of 256); Q4_0, Q5_0, Q8_0 and IQ4_NL in blocks of 32.
bool superBlocks(Type t) { return t == Type::Q4_K || t == Type::Q5_K || t == Type::Q6_K || t == Type::IQ4_XS; }

kernels::ActKind actKindOf(Type t) {
    return superBlocks(t) ? kernels::ActKind::Q8x256 : kernels::ActKind::Q8x32;
}

// The smallest chunk of row groups a thread claims in a repacked matMul: 1/512 of a thread's
// share, one group for most matrices, so the threads finish within a group of each other (1/32
// made decode steps ~1% longer, measured alternating steps in one process).
int64_t groupGrain(int64_t groups, int parts) {
    return std::max<int64_t>(1, groups / (512 * int64_t(parts)));
}

// Bytes per block of a group (for the K types, scales included) and per group of 16 rows, for nb
// blocks (of 32 columns; K types: of 256) per row.
struct Layout {
    uint64_t payloadBytes, groupBytes;
};
Layout layoutOf(Type t, int64_t nb) {
    if (superBlocks(t)) {
        const uint64_t block = t == Type::Q4_K    ? kQ4KBlockBytes
                               : t == Type::Q5_K  ? kQ5KBlockBytes
                               : t == Type::IQ4_XS ? kIQ4XSBlockBytes
                                                   : kQ6KBlockBytes;
        return {block, uint64_t(nb) * block};
    }
    const uint64_t payload = t == Type::Q4_0 || t == Type::IQ4_NL || t == Type::MXFP4 ? 256 : t == Type::Q5_0 ? 320 : 512;
    return {payload, uint64_t(nb) * (payload + 2 * kPackRows)};
}

} // namespace

namespace {
bool hasLayout(Type t) {
    return t == Type::Q4_0 || t == Type::Q5_0 || t == Type::Q8_0 || t == Type::Q4_K || t == Type::Q5_K || t == Type::Q6_K ||
           t == Type::IQ4_NL || t == Type::IQ4_XS || t == Type::MXFP4;
}
} // namespace

bool canRepack(quant::Type t, Isa isa) { return isa != Isa::Scalar && isaSupported(isa) && hasLayout(t); }

Result<uint64_t> PackedMatrix::packedBytes(const ref::Matrix& w) {
    if (!hasLayout(w.type))
        return unsupported("repack: no repacked layout for " +
                           std::string(quant::typeName(w.type)));
    const int64_t blockCols = superBlocks(w.type) ? 256 : 32;
    if (!w.data || w.rows <= 0 || w.cols <= 0 || w.cols % blockCols != 0)
        return invalidArgument("repack: bad matrix (rows " + std::to_string(w.rows) + ", cols " +
                               std::to_string(w.cols) + ")");
    // One block's bytes in the file's layout (the blocks' sizes are the quant module's).
    HEARTH_ASSIGN_OR_RETURN(const uint64_t blockBytes, quant::rowBytes(w.type, uint64_t(blockCols)));
    const int64_t nb = w.cols / blockCols;
    if (w.rowBytes < uint64_t(nb) * blockBytes)
        return invalidArgument("repack: rowBytes too small");
    const uint64_t groups = uint64_t((w.rows + kPackRows - 1) / kPackRows);
    return (groups * layoutOf(w.type, nb).groupBytes + 63) / 64 * 64;
}

Result<PackedMatrix> PackedMatrix::pack(const ref::Matrix& w, bool releaseSource, uint8_t* into) {
    HEARTH_ASSIGN_OR_RETURN(const uint64_t total, packedBytes(w));
    const int64_t nb = w.cols / (superBlocks(w.type) ? 256 : 32);
    PackedMatrix m;
    m.m_type = w.type;
    m.m_rows = w.rows;
    m.m_cols = w.cols;
    const Layout layout = layoutOf(w.type, nb);
    m.m_payloadBytes = layout.payloadBytes;
    m.m_groupBytes = layout.groupBytes;
    if (into) {
        m.m_data = into;
    } else {
        // Weights are streamed in full every step: on 4 KiB pages each 4 KiB read costs a TLB
        // miss (a two-level walk under virtualization).
        m.m_own = ZeroedMemory(size_t(total), /*hugePages=*/true);
        if (!m.m_own.ok()) return outOfMemory("repack: " + std::to_string(total) + " bytes");
        m.m_data = m.m_own.data();
    }

    // With releaseSource, the source pages go back every ~8 MiB, so that packing a big matrix
    // (a tied embedding) does not hold both whole copies at once.
    const uint64_t srcBytes = uint64_t(w.rows) * w.rowBytes;
    const int64_t releaseEvery = std::max<int64_t>(1, int64_t((8u << 20) / (kPackRows * w.rowBytes)));
    uint64_t released = 0;
    const bool fromFile = releaseSource && fileBacked(w.data);
    auto releaseUpTo = [&](uint64_t end) {
        // Whole pages of [released, end), plus the page holding `released` that the last call
        // had to leave (it held bytes not yet copied).
        const uintptr_t base = reinterpret_cast<uintptr_t>(w.data);
        const uintptr_t from = std::max(base, (base + released) & ~uintptr_t(4095));
        releasePages(reinterpret_cast<const uint8_t*>(from), base + end - from, fromFile);
        released = end;
    };
    for (int64_t g = 0; g < m.groups(); ++g) {
        if (releaseSource && g > 0 && g % releaseEvery == 0)
            releaseUpTo(uint64_t(g * kPackRows) * w.rowBytes);
        const int nRows = int(std::min<int64_t>(kPackRows, w.rows - g * kPackRows));
        const uint8_t* src[kPackRows] = {};
        for (int i = 0; i < nRows; ++i) src[i] = w.data + uint64_t(g * kPackRows + i) * w.rowBytes;
        uint8_t* grp = m.m_data + uint64_t(g) * m.m_groupBytes;
        if (nRows < kPackRows || w.type == Type::Q6_K) std::memset(grp, 0, m.m_groupBytes);
        if (w.type == Type::Q6_K) {
            for (int64_t b = 0; b < nb; ++b)
                packBlockQ6K(src, nRows, b, grp + uint64_t(b) * kQ6KBlockBytes);
            continue;
        }
        if (w.type == Type::Q4_K) {
            for (int64_t b = 0; b < nb; ++b)
                packBlockQ4K<quant::BlockQ4_K>(src, nRows, b, grp + uint64_t(b) * kQ4KBlockBytes);
            continue;
        }
        if (w.type == Type::Q5_K) {
            for (int64_t b = 0; b < nb; ++b)
                packBlockQ4K<quant::BlockQ5_K>(src, nRows, b, grp + uint64_t(b) * kQ5KBlockBytes);
            continue;
        }
        if (w.type == Type::IQ4_XS) {
            for (int64_t b = 0; b < nb; ++b)
                packBlockIQ4XS(src, nRows, b, grp + uint64_t(b) * kIQ4XSBlockBytes);
            continue;
        }
        // Pairs of blocks: both payloads, then both blocks' scales (an odd last block alone).
        const uint64_t pb = m.m_payloadBytes, unitBytes = 2 * pb + 2 * 2 * kPackRows;
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* unit = grp + uint64_t(b / 2) * unitBytes;
            const uint64_t inUnit = b + 1 < nb || b % 2 ? 2 : 1; // blocks in this unit
            packBlock(w.type, src, nRows, b, unit + uint64_t(b % 2) * pb,
                      reinterpret_cast<uint16_t*>(unit + inUnit * pb) + kPackRows * (b % 2));
        }
    }
    if (releaseSource) releaseUpTo(srcBytes);
    return m;
}

Status matMul(const ref::Matrix& w, const PackedMatrix* packed, const float* x, int64_t n,
              float* y, ThreadPool* pool) {
    return matMul(w, packed, x, n, y, pool, activeIsaLevel());
}

namespace {

bool cpuIsIntel() {
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu; // "Genu" "ineI" "ntel"
#else
    return false;
#endif
}

// How far decode prefetches the weights: this many blocks of 32 columns ahead (K types: that
// share of a super-block). Measured on 1B / 0.5B decode, one process per distance, alternating:
// Zen 4 (EPYC) streams best 16 ahead (4 KiB of Q4_0; 1-16 KiB tried); Sapphire Rapids 4 ahead
// (against 16: 1-thread 1B Q4_0 +20%, qwen2.5-0.5b Q4_K_M +25%, 1B Q4_K_M +8%, Q8_0 +5%; 2 threads
// +9% on qwen2.5-0.5b Q4_0; 8 ahead was between). The 256-bit kernels take a group in two
// passes of half its rows, the first streaming it at twice the pace: 16 ahead there (Sapphire
// Rapids at the avx2 level, 2 threads, 1B Q4_0 decode: 4 ahead 19.4-20.8 tok/s, 8 ahead 21.8-23.4,
// 16 22.1-24.8, 32 and 64 no better; Q4_K_M and Q8_0 the same for 4 and 16). AVX-512 on Intel
// CPUs takes 4, everything else 16; HEARTH_CPU_PREFETCH_BLOCKS (0-256) overrides.
int64_t prefetchBlocks(Isa isa) {
    static const int64_t fromEnv = [] {
        if (const char* env = std::getenv("HEARTH_CPU_PREFETCH_BLOCKS")) {
            char* end = nullptr;
            const long v = std::strtol(env, &end, 10);
            if (end != env && *end == '\0' && v >= 0 && v <= 256) return int64_t(v);
        }
        return int64_t(-1);
    }();
    static const bool intel = cpuIsIntel();
    if (fromEnv >= 0) return fromEnv;
    return isa == Isa::Avx512 && intel ? 4 : 16;
}

// The kernels' job for y = x · Wᵀ on a repacked copy, all but the activations. The weights are
// prefetched for every n: the first tile over a group streams it from memory, and without the
// prefetch a Q4_K 6144 x 2048 matMul out of DRAM took 76 us/token at n = 8 and 61 at n = 16
// against 46 and 43 with it (one thread, Zen 5; 41 when the matrix sits in L3).
kernels::PackedJob packedJob(const PackedMatrix& packed, float* y, Isa isa) {
    kernels::PackedJob job;
#if defined(__x86_64__)
    job.run = isa == Isa::Avx512    ? &kernels::packedGroupsAvx512
              : isa == Isa::AvxVnni ? &kernels::packedGroupsAvxVnni
                                    : &kernels::packedGroupsAvx2;
#else
    (void)isa;
#endif
    job.w = packed.group(0);
    job.type = packed.type();
    job.cols = packed.cols();
    job.rows = packed.rows();
    job.groupBytes = packed.groupBytes();
    job.payloadBytes = packed.payloadBytes();
    job.y = y;
    job.prefetchBytes =
        uint64_t(prefetchBlocks(isa)) * (superBlocks(job.type) ? job.payloadBytes / 8 : job.payloadBytes);
    return job;
}

#if defined(__x86_64__)
// Runs `job` (activations quantized) over its `groups` row groups and n tokens, split over pool.
// Each output comes from one tile whatever the split, so any chunking gives the same bits.
void runPacked(const kernels::PackedJob& given, int64_t groups, int64_t n, ThreadPool* pool) {
    const int parts = pool ? pool->size() : 1;
    kernels::PackedJob job = given;
    if (job.type == Type::IQ4_XS && job.run == &kernels::packedGroupsAvx2 && n >= kIQ4XSWideFrom && parts > 1) {
        // The AVX2 IQ4_XS tiles read 16-bit activations: widened once here, not per chunk.
        thread_local std::vector<int16_t> wide;
        const int64_t tiles = (n + 7) / 8;
        wide.resize(uint64_t(tiles * 8 * job.cols));
        int16_t* out = wide.data();
        pool->parallelFor(tiles, [&](int64_t t0, int64_t t1) {
            kernels::widenIQ4XSActsAvx2(job, 8 * t0, std::min(n, 8 * t1), out);
        });
        job.wideActs = out;
    }
    if (parts <= 1 || groups == 1) {
        job.run(job, 0, groups, 0, n);
    } else if (groups >= 4 * parts || n < 16) {
        // Rows in tile-aligned chunks, shrinking as the job drains (ThreadPool hands them out
        // guided), down to groupGrain. Q4_K and IQ4_XS take groups in pairs from 4 tokens on
        // (repack_avx512.cpp): chunks of whole pairs, so that none leaves a group alone.
        const int64_t unit =
            n >= 4 && (job.type == Type::Q4_K || job.type == Type::Q5_K || job.type == Type::IQ4_XS) ? 2 : 1;
        const int64_t units = (groups + unit - 1) / unit;
        pool->parallelFor(units, [&](int64_t u0, int64_t u1) {
            job.run(job, u0 * unit, std::min(groups, u1 * unit), 0, n);
        }, groupGrain(units, parts));
    } else {
        // Few row groups and many tokens: split the tokens too, in chunks of 8.
        const int64_t tchunks = (n + 7) / 8;
        pool->parallelFor(groups * tchunks, [&](int64_t c0, int64_t c1) {
            for (int64_t c = c0; c < c1; ++c) {
                const int64_t g = c / tchunks, j = (c % tchunks) * 8;
                job.run(job, g, g + 1, j, std::min<int64_t>(n, j + 8));
            }
        });
    }
}
#endif

} // namespace

Status matMul(const ref::Matrix& w, const PackedMatrix* packed, const float* x, int64_t n,
              float* y, ThreadPool* pool, Isa isa) {
    if (!packed || !canRepack(packed->type(), isa)) return matMul(w, x, n, y, pool, isa);
    if (packed->type() != w.type || packed->rows() != w.rows || packed->cols() != w.cols)
        return invalidArgument("matMul: the repacked copy does not match the matrix");
    if (n < 0) return invalidArgument("matMul: n " + std::to_string(n));
    if (n == 0) return Status::ok();
    if (!x || !y) return invalidArgument("matMul: null x or y");

    kernels::PackedJob job = packedJob(*packed, y, isa);
    job.acts =
        kernels::quantizeActivations(actKindOf(job.type), x, n, job.cols, pool, &job.actRowBytes);
    if (!job.acts) return outOfMemory("matMul: activation buffer");
#if defined(__x86_64__)
    runPacked(job, packed->groups(), n, pool);
    return Status::ok();
#else
    return internalError("matMul: repacked weights on a CPU without the kernel");
#endif
}

namespace {

constexpr size_t kMaxShared = 4;

// Whether matMulShared runs `outs` as one job (given x and the outputs): at decode, with more
// than one thread, for repacked copies (matching their matrices) of one type and width.
bool oneSharedJob(std::span<const SharedMatMul> outs, int64_t n, const ThreadPool* pool) {
    if (!pool || pool->size() <= 1 || n < 1 || n > kDecodeTokens || outs.size() < 2 || outs.size() > kMaxShared)
        return false;
    const Isa isa = activeIsaLevel();
    for (const SharedMatMul& o : outs) {
        const PackedMatrix* p = o.packed;
        if (!o.w || !p || !canRepack(p->type(), isa) || p->type() != o.w->type ||
            p->rows() != o.w->rows || p->cols() != o.w->cols || p->type() != outs[0].w->type ||
            p->cols() != outs[0].w->cols)
            return false;
    }
    return true;
}

#if defined(__x86_64__)
// Whether `outs` all have repacked copies (matching their matrices) that take the same
// quantized activations: one width and one activation kind.
bool sameActivations(std::span<const SharedMatMul> outs) {
    if (outs.size() < 2) return false;
    const Isa isa = activeIsaLevel();
    for (const SharedMatMul& o : outs) {
        const PackedMatrix* p = o.packed;
        if (!o.w || !p || !canRepack(p->type(), isa) || p->type() != o.w->type || p->rows() != o.w->rows ||
            p->cols() != o.w->cols || p->cols() != outs[0].w->cols ||
            actKindOf(p->type()) != actKindOf(outs[0].w->type))
            return false;
    }
    return true;
}
#endif

} // namespace

Status matMulShared(std::span<const SharedMatMul> outs, const float* x, int64_t n, ThreadPool* pool) {
    const Isa isa = activeIsaLevel();
    for (const SharedMatMul& o : outs)
        if (!o.w) return invalidArgument("matMul: no matrix");
#if defined(__x86_64__)
    const bool outputs = std::all_of(outs.begin(), outs.end(), [](const SharedMatMul& o) { return o.y; });
    if (x && outputs && oneSharedJob(outs, n, pool)) {
        uint64_t actRowBytes = 0;
        const uint8_t* acts = kernels::quantizeActivations(actKindOf(outs[0].w->type), x, n,
                                                           outs[0].w->cols, pool, &actRowBytes);
        if (!acts) return outOfMemory("matMul: activation buffer");
        kernels::PackedJob jobs[kMaxShared];
        int64_t ends[kMaxShared]; // the matrices' groups, end to end: matrix i ends at ends[i]
        int64_t total = 0;
        for (size_t i = 0; i < outs.size(); ++i) {
            jobs[i] = packedJob(*outs[i].packed, outs[i].y, isa);
            jobs[i].acts = acts;
            jobs[i].actRowBytes = actRowBytes;
            total += outs[i].packed->groups();
            ends[i] = total;
        }
        const size_t count = outs.size();
        pool->parallelFor(total, [&](int64_t g0, int64_t g1) {
            for (size_t i = 0, start = 0; i < count && g0 < g1; start = size_t(ends[i]), ++i) {
                if (g0 >= ends[i]) continue;
                const int64_t e = std::min(g1, ends[i]);
                jobs[i].run(jobs[i], g0 - int64_t(start), e - int64_t(start), 0, n);
                g0 = e;
            }
        }, groupGrain(total, pool->size()));
        return Status::ok();
    }
    if (x && outputs && n > kDecodeTokens && sameActivations(outs)) {
        // Past decode each matrix runs as its own job, but x is quantized once for all of them.
        uint64_t actRowBytes = 0;
        const uint8_t* acts = kernels::quantizeActivations(actKindOf(outs[0].w->type), x, n,
                                                           outs[0].w->cols, pool, &actRowBytes);
        if (!acts) return outOfMemory("matMul: activation buffer");
        for (const SharedMatMul& o : outs) {
            kernels::PackedJob job = packedJob(*o.packed, o.y, isa);
            job.acts = acts;
            job.actRowBytes = actRowBytes;
            runPacked(job, o.packed->groups(), n, pool);
        }
        return Status::ok();
    }
#endif
    for (const SharedMatMul& o : outs) HEARTH_RETURN_IF_ERROR(matMul(*o.w, o.packed, x, n, o.y, pool, isa));
    return Status::ok();
}

Status matMulExperts(std::span<const ExpertMatMul> jobs, ThreadPool* pool) {
    if (jobs.empty()) return Status::ok();
    const Isa isa = activeIsaLevel();
    for (const ExpertMatMul& j : jobs)
        if (!j.w || !j.x || !j.y || j.n < 0) return invalidArgument("matMulExperts: an incomplete job");
#if defined(__x86_64__)
    const ref::Matrix& first = *jobs[0].w;
    bool one = pool && pool->size() > 1 && jobs.size() > 1;
    for (const ExpertMatMul& j : jobs) {
        const PackedMatrix* p = j.packed;
        one = one && j.n >= 1 && p && canRepack(p->type(), isa) && p->type() == j.w->type &&
              p->rows() == j.w->rows && p->cols() == j.w->cols && p->type() == first.type && p->cols() == first.cols;
    }
    if (one) {
        // The jobs' distinct inputs side by side, quantized in one go.
        thread_local std::vector<float> inputs;
        thread_local std::vector<std::pair<const float*, int64_t>> starts; // input, its first row
        thread_local std::vector<kernels::PackedJob> packed;
        thread_local std::vector<int64_t> ends;
        const int64_t cols = first.cols;
        starts.clear();
        int64_t rows = 0;
        for (const ExpertMatMul& j : jobs) {
            bool seen = false;
            for (const auto& s : starts) seen = seen || s.first == j.x;
            if (!seen) {
                starts.emplace_back(j.x, rows);
                rows += j.n;
            }
        }
        // Inputs already side by side in that order (prefill's gathered rows) are read in place.
        bool inPlace = true;
        for (const auto& s : starts) inPlace = inPlace && s.first == starts[0].first + s.second * cols;
        if (!inPlace) {
            inputs.resize(size_t(rows * cols));
            for (const auto& s : starts)
                for (const ExpertMatMul& j : jobs)
                    if (s.first == j.x) {
                        std::memcpy(inputs.data() + s.second * cols, j.x, size_t(j.n * cols) * 4);
                        break;
                    }
        }
        uint64_t actRowBytes = 0;
        const uint8_t* acts = kernels::quantizeActivations(actKindOf(first.type), inPlace ? starts[0].first : inputs.data(),
                                                           rows, cols, pool, &actRowBytes);
        if (!acts) return outOfMemory("matMul: activation buffer");
        packed.resize(jobs.size());
        ends.resize(jobs.size());
        int64_t total = 0;
        for (size_t i = 0; i < jobs.size(); ++i) {
            packed[i] = packedJob(*jobs[i].packed, jobs[i].y, isa);
            for (const auto& s : starts)
                if (s.first == jobs[i].x) packed[i].acts = acts + uint64_t(s.second) * actRowBytes;
            packed[i].actRowBytes = actRowBytes;
            total += jobs[i].packed->groups();
            ends[i] = total;
        }
        // The workers see their own thread_local vectors: hand them this thread's by pointer.
        const kernels::PackedJob* work = packed.data();
        const int64_t* workEnds = ends.data();
        const size_t count = jobs.size();
        pool->parallelFor(total, [work, workEnds, count, jobs](int64_t g0, int64_t g1) {
            // The job holding g0: the ends ascend.
            size_t i = size_t(std::upper_bound(workEnds, workEnds + count, g0) - workEnds);
            for (; i < count && g0 < g1; ++i) {
                const int64_t start = workEnds[i] - jobs[i].packed->groups(), e = std::min(g1, workEnds[i]);
                work[i].run(work[i], g0 - start, e - start, 0, jobs[i].n);
                g0 = e;
            }
        }, groupGrain(total, pool->size()));
        return Status::ok();
    }
#endif
    for (const ExpertMatMul& j : jobs) HEARTH_RETURN_IF_ERROR(matMul(*j.w, j.packed, j.x, j.n, j.y, pool, isa));
    return Status::ok();
}

namespace {

// The groups of the decode job over `next` (matrices end to end) that the split gives thread
// `who` (0: the caller, 1: the first worker) first, up to 4 MiB: its matrix, group and bytes.
struct ChunkStart {
    const PackedMatrix* matrix = nullptr;
    int64_t group = 0;
    uint64_t bytes = 0;
};
// The thread's chunk of `matrices` end to end (each with `packed`), split as the pool splits
// one job over all their groups.
template <typename Item>
ChunkStart chunkOf(std::span<const Item> next, const ThreadPool* pool, int who) {
    // The worker stops at the next job anyway; caps of 0.5, 1, 2 and 4 MiB measured each better
    // than the one before (what leaves L2 early waits in the L3).
    constexpr uint64_t kMaxBytes = 4096 << 10;
    int64_t total = 0;
    for (const Item& o : next) {
        if (!o.packed) return {}; // not a repacked job
        total += o.packed->groups();
    }
    // ThreadPool's guided claims: the caller takes the first chunk, the worker the next.
    const int64_t grain = groupGrain(total, pool->size());
    const int64_t callerGroups = pool->claimSize(total, grain);
    int64_t first = who == 0 ? 0 : callerGroups;
    int64_t count = who == 0 ? callerGroups : pool->claimSize(total - callerGroups, grain);
    for (const Item& o : next) {
        const PackedMatrix& p = *o.packed;
        if (first >= p.groups()) {
            first -= p.groups();
            continue;
        }
        count = std::min(count, p.groups() - first); // what of the chunk lies in this matrix
        return {&p, first, std::min(uint64_t(count) * p.groupBytes(), kMaxBytes)};
    }
    return {};
}

ChunkStart firstChunk(std::span<const SharedMatMul> next, int64_t n, const ThreadPool* pool, int who) {
    if (!pool || pool->size() <= 1 || n < 1 || n > kDecodeTokens || next.empty()) return {};
    // Separate jobs unless matMulShared makes them one: then the first matrix's job comes first.
    if (next.size() > 1 && !oneSharedJob(next, n, pool)) next = next.first(1);
    return chunkOf(next, pool, who);
}

// matMulExperts' decode job: all the experts' groups end to end (one expert alone is matMul's).
ChunkStart firstExpertChunk(std::span<const ExpertMatMul> next, const ThreadPool* pool, int who) {
    if (!pool || pool->size() <= 1 || next.empty()) return {};
    for (const ExpertMatMul& j : next)
        if (j.n < 1 || j.n > kDecodeTokens) return {};
    return chunkOf(next, pool, who);
}

} // namespace

void prefetchWorkerChunk(std::span<const SharedMatMul> next, int64_t n, ThreadPool* pool) {
    const ChunkStart c = firstChunk(next, n, pool, 1);
    if (c.matrix) pool->prefetchWhileIdle(c.matrix->group(c.group), size_t(c.bytes));
}

void prefetchCallerChunk(std::span<const SharedMatMul> next, int64_t n, ThreadPool* pool) {
    const ChunkStart c = firstChunk(next, n, pool, 0);
    if (c.matrix) pool->prefetchWhileWaiting(c.matrix->group(c.group), size_t(c.bytes));
}

void prefetchWorkerChunk(std::span<const ExpertMatMul> next, ThreadPool* pool) {
    const ChunkStart c = firstExpertChunk(next, pool, 1);
    if (c.matrix) pool->prefetchWhileIdle(c.matrix->group(c.group), size_t(c.bytes));
}

void prefetchCallerChunk(std::span<const ExpertMatMul> next, ThreadPool* pool) {
    const ChunkStart c = firstExpertChunk(next, pool, 0);
    if (c.matrix) pool->prefetchWhileWaiting(c.matrix->group(c.group), size_t(c.bytes));
}

PackedMatrix PackedMatrix::firstRows(int64_t rows) const {
    PackedMatrix v;
    v.m_type = m_type;
    v.m_rows = std::min(rows, m_rows);
    v.m_cols = m_cols;
    v.m_groupBytes = m_groupBytes;
    v.m_payloadBytes = m_payloadBytes;
    v.m_data = m_data;
    return v;
}

const PackedMatrix* RepackedWeights::holder(const uint8_t* data) const {
    const auto it = m_map.find(data);
    if (it != m_map.end()) return it->second.get();
    return m_base ? m_base->holder(data) : nullptr;
}

bool RepackedWeights::needsCopy(const ref::Matrix& w) const {
    if (!canRepack(w.type, activeIsaLevel()) || !w.data) return false;
    const PackedMatrix* h = holder(w.data);
    return !h || h->rows() < w.rows;
}

void RepackedWeights::addView(const ref::Matrix& w) {
    if (!w.data || find(w)) return;
    const PackedMatrix* h = holder(w.data);
    if (h && h->type() == w.type && h->cols() == w.cols && h->rows() > w.rows && w.rows % kPackRows == 0)
        m_views.emplace(std::make_pair(w.data, w.rows), std::make_unique<PackedMatrix>(h->firstRows(w.rows)));
}

Status RepackedWeights::add(const ref::Matrix& w, bool releaseSource) {
    if (needsCopy(w)) {
        HEARTH_ASSIGN_OR_RETURN(PackedMatrix p, PackedMatrix::pack(w, releaseSource));
        m_bytes += p.bytes();
        m_map.insert_or_assign(w.data, std::make_unique<PackedMatrix>(std::move(p)));
    }
    addView(w);
    return Status::ok();
}

Status RepackedWeights::addAll(const std::vector<ref::Matrix>& ws, bool releaseSource,
                               ThreadPool* pool) {
    // The distinct matrices that get a copy (tied embeddings appear twice; of matrices at the
    // same data, the one with the most rows: the others' rows are its first ones).
    std::vector<const ref::Matrix*> todo;
    std::unordered_map<const uint8_t*, size_t> seen;
    for (const ref::Matrix& w : ws) {
        if (!needsCopy(w)) continue;
        const auto [it, added] = seen.emplace(w.data, todo.size());
        if (added) todo.push_back(&w);
        else if (todo[it->second]->rows < w.rows) todo[it->second] = &w;
    }
    // One mapping for all the copies, each at a 4 KiB-aligned offset.
    std::vector<uint64_t> offsets(todo.size());
    uint64_t total = 0;
    for (size_t i = 0; i < todo.size(); ++i) {
        HEARTH_ASSIGN_OR_RETURN(const uint64_t bytes, PackedMatrix::packedBytes(*todo[i]));
        offsets[i] = total;
        total += (bytes + 4095) / 4096 * 4096;
    }
    if (total == 0) {
        for (const ref::Matrix& w : ws) addView(w);
        return Status::ok();
    }
    ZeroedMemory arena(size_t(total), /*hugePages=*/true);
    if (!arena.ok()) return outOfMemory("repack: " + std::to_string(total) + " bytes");
    std::vector<std::unique_ptr<PackedMatrix>> packed(todo.size());
    std::vector<Status> status(todo.size());
    auto packRange = [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const ref::Matrix& w = *todo[size_t(i)];
            auto p = PackedMatrix::pack(w, releaseSource, arena.data() + offsets[size_t(i)]);
            if (!p.isOk()) {
                status[size_t(i)] = p.status();
                continue;
            }
            packed[size_t(i)] = std::make_unique<PackedMatrix>(std::move(*p));
        }
    };
    if (pool) pool->parallelFor(int64_t(todo.size()), packRange);
    else packRange(0, int64_t(todo.size()));
    for (size_t i = 0; i < todo.size(); ++i) HEARTH_RETURN_IF_ERROR(status[i]);
    for (size_t i = 0; i < todo.size(); ++i) {
        m_bytes += packed[i]->bytes();
        m_map.insert_or_assign(todo[i]->data, std::move(packed[i]));
    }
    m_arenas.push_back(std::move(arena));
    for (const ref::Matrix& w : ws) addView(w);
    return Status::ok();
}

const PackedMatrix* RepackedWeights::find(const ref::Matrix& w) const {
    auto same = [&](const PackedMatrix* p) {
        return p->type() == w.type && p->rows() == w.rows && p->cols() == w.cols;
    };
    if (const auto it = m_map.find(w.data); it != m_map.end() && same(it->second.get())) return it->second.get();
    if (const auto it = m_views.find({w.data, w.rows}); it != m_views.end() && same(it->second.get()))
        return it->second.get();
    return m_base ? m_base->find(w) : nullptr;
}

} // namespace hearth::cpu
