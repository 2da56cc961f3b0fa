// Weight matrices (Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4, Q4_K, Q5_K, Q6_K, IQ4_XS) rearranged once at load into the interleaved layout of the
// repacked kernels (16 rows side by side in 4-byte column groups, scales gathered: one AVX-512
// register, or two 256-bit ones, per column group), and the matMul that uses them, falling back
// to the plain kernels where the layout does not apply.
#pragma once

#include "backend/cpu/matmul.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/zeroed_memory.h"
#include "hearth/status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace hearth::cpu {

// Layout (Q4_0, Q5_0 and Q8_0, blocks of 32 columns): rows are taken 16 at a time (a group; the last
// one padded with zero rows). A group's blocks are stored in pairs (units): the payloads of
// blocks 2u and 2u + 1, then their two scale blocks (an odd last block: its payload, then its
// scales), so that decode reads one sequential stream:
//   payload block b: 4-byte column chunks k of the block, each chunk holding 16 rows × 4 bytes
//     (64 bytes: row i at bytes 4i..4i+3), so one 512-bit load gives one chunk of all 16 rows.
//     Q4_0: 4 chunks of the original nibble bytes (low nibbles: columns 4k..4k+3, high nibbles:
//     columns 16+4k..16+4k+3), 256 bytes; Q5_0: those 256 bytes, then 8 bit masks of 8 bytes,
//     mask v bit 4i + e = the fifth bit of row i's column 4v + e (the column that byte 4i + e of
//     nibble vector v holds: low nibbles of chunk v for v < 4, high nibbles of chunk v - 4
//     otherwise), 320 bytes; Q8_0: 8 chunks of q + 128 (unsigned), 512 bytes.
//   scale block b: the 16 rows' fp16 scales, 32 bytes.
// A unit is 576 bytes (Q4_0), 704 (Q5_0) or 1,088 (Q8_0), whole cache lines.
// The size equals the original's (plus the padding rows), so the model's memory does not grow
// when the original pages are released.
//
// Q4_K (super-blocks of 256 columns): each block of a group is 2368 bytes, 2.8% more than the
// original's 16 × 144:
//   [0, 2048): 32 chunks of 64 bytes; chunk 8c + k holds qs[32c + 4k .. 32c + 4k + 3] of each
//     row (row i at bytes 4i..4i+3): low nibbles are columns 64c + 4k.., high ones 64c + 32 + 4k..
//   [2048, 2080): the 16 rows' d (fp16); [2080, 2112): their dmin (fp16);
//   [2112, 2240): the 6-bit scales as bytes, sub-block j of row i at 16j + i;
//   [2240, 2368): the 6-bit mins as bytes, sub-block j of row i at 32(j/2) + 2i + j%2.
// Q5_K: Q4_K's 2368 bytes (its low 4 bits, d, dmin, scales and mins), then [2368, 2880): 8 vectors
//   of 64 bytes holding the fifth bits: byte 4i + e of vector k has, in bit j, the fifth bit of
//   row i's column 32j + 4k + e (that is the original's qh[4k + e]); 2880 bytes, 2.3% more than
//   the original's 16 × 176.
//
// Q6_K (super-blocks of 256 columns): each block of a group is 3360 bytes, the original's 16 × 210.
// Column chunk c (columns 4c..4c+3) of row i holds u = q + 32 (0..63) as a low nibble and 2 high
// bits, row i at bytes 4i..4i+3 of its vectors:
//   [0, 2048): 32 nibble vectors of 64 bytes; vector v: chunk v in the low nibbles, chunk v + 32
//     in the high nibbles;
//   [2048, 3072): 16 high-bit vectors; vector h: bits 2p..2p+1 are chunk h + 16p's (p < 4);
//   [3072, 3328): the 8-bit scales, sub-block j of row i at 16j + i; [3328, 3360): d (fp16).
//
// IQ4_NL and MXFP4 (blocks of 32) are laid out as Q4_0: their nibbles are indices of 16 levels,
// which the kernel looks up; MXFP4's scale block holds the rows' 16 E8M0 exponents (16 bytes, 16
// zero), which the kernel turns into float scales. IQ4_XS (super-blocks of 256 columns): each block of a group is 2240 bytes (the
// original's 16 × 136, 3% more):
//   [0, 2048): the level indices in Q4_K's chunk order (low nibbles columns 64c + 4k.., high ones
//     64c + 32 + 4k..); [2048, 2080): the 16 rows' d (fp16); [2080, 2208): the 6-bit scales
//     minus 32 as signed bytes, sub-block j of row i at 16j + i; [2208, 2240): zero.
inline constexpr int kPackRows = 16;
inline constexpr uint64_t kQ4KPayload = 2048;
inline constexpr uint64_t kQ4KBlockBytes = 2368;
inline constexpr uint64_t kQ5KBlockBytes = 2880;
inline constexpr uint64_t kQ6KBlockBytes = 3360;
inline constexpr uint64_t kIQ4XSBlockBytes = 2240;
// From this many tokens the AVX2 (no VNNI) IQ4_XS kernels take the 16-bit "wide" form
// (repack_avx2_kernels.h), below it the tiles: bench_matmul rows, 2 threads, Zen 5, the tiles
// took 0.55-0.65x the wide form's time at 4-6 tokens, 0.9x at 8, and the two met at 12-16.
inline constexpr int64_t kIQ4XSWideFrom = 16;
// A decode step's size: one token per stream, or one and its drafts. Up to this many tokens the
// products sharing an input run as one parallel job and the next job's weights are prefetched
// (matMulShared, matMulExperts, the prefetch functions below). 8 against 4: steps of 5 tokens
// (4 drafts) 1-2% faster at avx2 and 1-6% at avx512 (1B Q4_0, 2 threads, A B A B).
inline constexpr int64_t kDecodeTokens = 8;

class PackedMatrix {
public:
    quant::Type type() const { return m_type; }
    int64_t rows() const { return m_rows; }
    int64_t cols() const { return m_cols; }
    int64_t groups() const { return (m_rows + kPackRows - 1) / kPackRows; }
    uint64_t groupBytes() const { return m_groupBytes; }
    uint64_t payloadBytes() const { return m_payloadBytes; } // per block of a group (K types: all)
    const uint8_t* group(int64_t g) const { return m_data + uint64_t(g) * m_groupBytes; }
    size_t bytes() const { return size_t(uint64_t(groups()) * m_groupBytes); }

    // Bytes of w's repacked copy (a multiple of 64). Errors: another type, a bad shape.
    static Result<uint64_t> packedBytes(const ref::Matrix& w);

    // Rearranges w (Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4, Q4_K, Q5_K, Q6_K or IQ4_XS). With releaseSource, w's pages are handed back to the
    // kernel as they are copied (see RepackedWeights::add). With `into` (packedBytes(w) zeroed
    // bytes, 64-byte aligned, outliving the result) the copy is written there; otherwise it gets
    // its own memory. Errors: another type, a bad shape, no memory.
    static Result<PackedMatrix> pack(const ref::Matrix& w, bool releaseSource = false,
                                     uint8_t* into = nullptr);
    // The copy of the first `rows` rows, a whole number of row groups: a view of this one's
    // first groups (which must outlive it).
    PackedMatrix firstRows(int64_t rows) const;

private:
    quant::Type m_type = quant::Type::F32;
    int64_t m_rows = 0, m_cols = 0;
    uint64_t m_groupBytes = 0, m_payloadBytes = 0;
    ZeroedMemory m_own; // the copy's memory, unless it lives in memory owned elsewhere
    uint8_t* m_data = nullptr;
};

// Whether weights of type t have a repacked kernel at this level (the types above, at Avx2,
// AvxVnni and Avx512, when the CPU runs the level).
bool canRepack(quant::Type t, Isa isa);

// y = x · Wᵀ as matMul, on the repacked copy when `packed` is given and `isa` has its kernel,
// otherwise on w. Same error statuses as matMul. Each output is computed by one tile whatever
// the thread count, so results are bitwise the same for any pool size. Results differ from the
// plain kernels' only by float summation order.
Status matMul(const ref::Matrix& w, const PackedMatrix* packed, const float* x, int64_t n,
              float* y, ThreadPool* pool);
Status matMul(const ref::Matrix& w, const PackedMatrix* packed, const float* x, int64_t n,
              float* y, ThreadPool* pool, Isa isa);

// One output of matMulShared: y[n][w.rows] = x · wᵀ, on the repacked copy when there is one.
struct SharedMatMul {
    const ref::Matrix* w = nullptr;
    const PackedMatrix* packed = nullptr;
    float* y = nullptr;
};

// matMul for matrices that multiply the same x (q, k and v; gate and up). At decode (n <= kDecodeTokens),
// with repacked copies of one type and width, in one parallel job over all their row groups
// after one activation quantization; past decode, with repacked copies of one width and
// activation format, matMul's job for each after one quantization; otherwise matMul for each.
// Same results as matMul.
Status matMulShared(std::span<const SharedMatMul> outs, const float* x, int64_t n, ThreadPool* pool);

// One expert's part of a mat_mul_id: y[n][w.rows] = x[n][w.cols] · wᵀ.
struct ExpertMatMul {
    const ref::Matrix* w = nullptr;
    const PackedMatrix* packed = nullptr;
    const float* x = nullptr;
    int64_t n = 0;
    float* y = nullptr;
};
// matMul for each job. At decode (every job n <= kDecodeTokens, repacked copies of one type and width, a
// pool of two or more threads) as one parallel job over all their row groups, after quantizing
// each distinct x once. Same results as matMul.
Status matMulExperts(std::span<const ExpertMatMul> jobs, ThreadPool* pool);
// Decode's weight prefetching around its jobs (n <= kDecodeTokens tokens, a pool of two or more threads,
// repacked copies; otherwise they do nothing). `next` is the job after: one matrix, or
// matMulShared's, whose groups run through its matrices end to end. ThreadPool's guided split
// hands the caller the first 1/(2·threads) of the groups and the first worker the next share;
// each function names that thread's first chunk of `next` (up to 4 MiB) to the pool:
// - prefetchWorkerChunk, called after a job: the idle worker prefetches its chunk while the
//   caller does the small steps in between (norms, RoPE, the KV write, SwiGLU);
// - prefetchCallerChunk, called before a job: the caller, once its part of that job is done
//   and it waits for the worker, prefetches its own chunk.
void prefetchWorkerChunk(std::span<const SharedMatMul> next, int64_t n, ThreadPool* pool);
void prefetchCallerChunk(std::span<const SharedMatMul> next, int64_t n, ThreadPool* pool);
// The same when the next job is matMulExperts' (a decode step's chosen experts, every job n <= kDecodeTokens).
void prefetchWorkerChunk(std::span<const ExpertMatMul> next, ThreadPool* pool);
void prefetchCallerChunk(std::span<const ExpertMatMul> next, ThreadPool* pool);

// The repacked copies of a model's weight matrices, found by the original's data pointer.
class RepackedWeights {
public:
    // Repacks w when canRepack(w.type, activeIsaLevel()); otherwise does nothing. With
    // releaseSource, the original's pages are then handed back to the kernel (file-backed,
    // read-only mappings reload them if they are read again), so resident memory holds the copy
    // instead of the original. Errors: out of memory, bad shapes.
    Status add(const ref::Matrix& w, bool releaseSource);

    // add() for each matrix, the packing spread over pool (nullptr: this thread). The copies
    // share one mapping, so that nearly all of them lie on huge pages (one matrix on its own
    // keeps small pages on its tail: most of a 2048 x 2048 Q4_0 matrix).
    Status addAll(const std::vector<ref::Matrix>& ws, bool releaseSource, ThreadPool* pool);

    // The repacked copy of w (its own, or the base's), or nullptr. A matrix of the first rows of
    // another one (a drafting head's shortlist of the output), a whole number of row groups, is
    // a view of that one's copy.
    const PackedMatrix* find(const ref::Matrix& w) const;

    // Copies another load made of the same file mapping (a multi-token-prediction head shares
    // its model's embeddings and output): found through find(), never repacked again here. Set
    // before adding.
    void setBase(std::shared_ptr<const RepackedWeights> base) { m_base = std::move(base); }

    size_t bytes() const { return m_bytes; } // its own copies only
    size_t count() const { return m_map.size(); }
    bool empty() const { return m_map.empty() && (!m_base || m_base->empty()); }

private:
    // The copy at w's data (its own, else the base's), whatever its rows; nullptr when none.
    const PackedMatrix* holder(const uint8_t* data) const;
    // Whether w needs a copy of its own: no copy holds its rows.
    bool needsCopy(const ref::Matrix& w) const;
    // A view for w when a copy holds more rows than it and w's are whole row groups.
    void addView(const ref::Matrix& w);

    std::shared_ptr<const RepackedWeights> m_base;
    std::map<std::pair<const uint8_t*, int64_t>, std::unique_ptr<PackedMatrix>> m_views; // firstRows views
    std::vector<ZeroedMemory> m_arenas; // addAll's shared memory
    std::unordered_map<const uint8_t*, std::unique_ptr<PackedMatrix>> m_map;
    size_t m_bytes = 0;
};

} // namespace hearth::cpu
