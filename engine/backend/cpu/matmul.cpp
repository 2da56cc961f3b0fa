// The matMul driver: argument checks, run-time instruction-set choice, activation quantization
// and the split of weight rows over the thread pool. Compiled for plain x86-64.
#include "backend/cpu/matmul.h"

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/target_clones.h"
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace hearth::cpu {

namespace {

using kernels::ActKind;
using kernels::ActQ8x256;
using kernels::ActQ8x32;

// AVX-VNNI (CPUID leaf 7 sub-leaf 1, EAX bit 4); GCC 12's __builtin_cpu_supports("avxvnni")
// answers false on CPUs that have it.
bool cpuHasAvxVnni() {
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0, nullptr) < 7 || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return (a >> 4) & 1u;
#else
    return false;
#endif
}

bool cpuHas(Isa isa) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::AvxVnni: return cpuHas(Isa::Avx2) && cpuHasAvxVnni();
    case Isa::Avx512:
        return cpuHas(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
    }
    return false;
#else
    return isa == Isa::Scalar;
#endif
}

Isa detectOnce() {
    if (cpuHas(Isa::Avx512)) return Isa::Avx512;
    if (cpuHas(Isa::AvxVnni)) return Isa::AvxVnni;
    if (cpuHas(Isa::Avx2)) return Isa::Avx2;
    return Isa::Scalar;
}

// HEARTH_CPU_ISA's level when it names one the CPU runs; otherwise the detected level.
Isa envLevel() {
    const char* env = std::getenv("HEARTH_CPU_ISA");
    Isa want = Isa::Scalar;
    if (!env || !*env || !isaFromName(env, &want) || !isaSupported(want)) return detectIsa();
    return want;
}

// The default level: HEARTH_CPU_ISA's, or the detected one; forceIsa replaces it.
std::atomic<int>& activeLevel() {
    static std::atomic<int> level{int(envLevel())};
    return level;
}

const kernels::IsaKernels& kernelsFor(Isa isa) {
#if defined(__x86_64__)
    switch (isa) {
    case Isa::Avx512: return kernels::avx512Kernels();
    case Isa::AvxVnni:
    case Isa::Avx2: return kernels::avx2Kernels();
    case Isa::Scalar: break;
    }
#else
    (void)isa;
#endif
    return kernels::scalarKernels();
}

// Round to nearest (ties to even) for |v| < 2^22, without a libm call.
inline int32_t roundToInt(float v) {
    const float t = v + 12582912.0f; // 1.5 * 2^23
    int32_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    return bits - 0x4B400000;
}

inline int8_t clampQ(int32_t q) { return int8_t(std::clamp(q, -127, 127)); }

void quantizeRow32(const float* x, ActQ8x32* out, int64_t cols) {
    for (int64_t b = 0; b < cols / 32; ++b, x += 32) {
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < 32; ++i) {
            const int8_t q = clampQ(roundToInt(x[i] * id));
            out[b].qs[i] = q;
            sum += q;
        }
        out[b].d = d;
        out[b].s = d * float(sum);
    }
}

void quantizeRow256(const float* x, ActQ8x256* out, int64_t cols) {
    for (int64_t b = 0; b < cols / 256; ++b, x += 256) {
        float amax = 0.0f;
        for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int g = 0; g < 16; ++g) {
            int32_t sum = 0;
            for (int i = 16 * g; i < 16 * g + 16; ++i) {
                const int8_t q = clampQ(roundToInt(x[i] * id));
                out[b].qs[i] = q;
                sum += q;
            }
            out[b].bsums[g] = int16_t(sum);
        }
        for (int j = 0; j < 8; ++j) out[b].sums32[j] = int16_t(out[b].bsums[2 * j] + out[b].bsums[2 * j + 1]);
        out[b].d = amax / 127.0f;
    }
}

// The portable quantizers compiled for the active level (vectorized by the compiler; the same
// bits at every level), for CPUs or forced levels below AVX-512.
HEARTH_ISA_DISPATCH(void, quantizeRow32Leveled, (const float* x, ActQ8x32* out, int64_t cols), (x, out, cols),
                    quantizeRow32)
HEARTH_ISA_DISPATCH(void, quantizeRow256Leveled, (const float* x, ActQ8x256* out, int64_t cols), (x, out, cols),
                    quantizeRow256)

// Growable, aligned, per-thread buffers (one for scratch, one for the activations of a call).
struct AlignedBuffer {
    struct Free {
        void operator()(void* p) const { std::free(p); }
    };
    std::unique_ptr<void, Free> data;
    size_t size = 0;

    void* get(size_t bytes) {
        if (bytes > size) {
            const size_t want = (std::max(bytes, size + size / 2) + 63) / 64 * 64;
            data.reset(std::aligned_alloc(64, want));
            size = data ? want : 0;
        }
        return data.get();
    }
};

thread_local AlignedBuffer tl_scratch;
thread_local AlignedBuffer tl_acts;

} // namespace

namespace kernels {

void* threadScratch(size_t bytes) { return tl_scratch.get(bytes); }

bool dequantizeWeightRow(const Job& job, int64_t r, float* out) {
    return quant::dequantizeRow(job.type, job.w + uint64_t(r) * job.rowBytes, out, job.cols)
        .isOk();
}

const uint8_t* quantizeActivations(ActKind kind, const float* x, int64_t n, int64_t cols,
                                   ThreadPool* pool, uint64_t* rowBytes) {
    const bool k256 = kind == ActKind::Q8x256;
    *rowBytes = uint64_t(cols / (k256 ? 256 : 32)) * (k256 ? sizeof(ActQ8x256) : sizeof(ActQ8x32));
    uint8_t* acts = static_cast<uint8_t*>(tl_acts.get(size_t(*rowBytes * uint64_t(n))));
    if (!acts) return nullptr;
    const uint64_t stride = *rowBytes;
    // The AVX-512 quantizers give the same bits as the portable ones; the choice follows the
    // kernels' level, so that a forced lower level times what a CPU of that level runs.
#if defined(__x86_64__)
    const bool wide = activeIsaLevel() == Isa::Avx512;
    auto row32 = wide ? &quantizeRow32Avx512 : &quantizeRow32Leveled;
    auto row256 = wide ? &quantizeRow256Avx512 : &quantizeRow256Leveled;
#else
    auto row32 = &quantizeRow32;
    auto row256 = &quantizeRow256;
#endif
    auto quantize = [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
            uint8_t* dst = acts + uint64_t(j) * stride;
            if (k256) row256(x + j * cols, reinterpret_cast<ActQ8x256*>(dst), cols);
            else row32(x + j * cols, reinterpret_cast<ActQ8x32*>(dst), cols);
        }
    };
    if (pool && n > 1) pool->parallelFor(n, quantize);
    else quantize(0, n);
    return acts;
}

} // namespace kernels

const char* isaName(Isa isa) {
    switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::AvxVnni: return "avxvnni";
    case Isa::Avx512: return "avx512";
    }
    return "?";
}

bool isaFromName(const char* name, Isa* isa) {
    for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512})
        if (std::strcmp(name, isaName(i)) == 0) {
            *isa = i;
            return true;
        }
    return false;
}

Status isaEnvStatus() {
    const char* env = std::getenv("HEARTH_CPU_ISA");
    if (!env || !*env) return Status::ok();
    Isa want = Isa::Scalar;
    const std::string has = std::string("this CPU runs scalar") +
                            (isaSupported(Isa::Avx2) ? ", avx2" : "") +
                            (isaSupported(Isa::AvxVnni) ? ", avxvnni" : "") +
                            (isaSupported(Isa::Avx512) ? ", avx512" : "");
    if (!isaFromName(env, &want))
        return invalidArgument("HEARTH_CPU_ISA='" + std::string(env) +
                               "' is not a level (scalar, avx2, avxvnni or avx512); " + has);
    if (!isaSupported(want))
        return invalidArgument("HEARTH_CPU_ISA=" + std::string(env) + ": " + has);
    return Status::ok();
}

Isa detectIsa() {
    static const Isa detected = detectOnce();
    return detected;
}

// The levels nest: an AVX-512 CPU here has AVX-VNNI's instructions as well (AVX512_VNNI brings
// the same vpdpbusd with VEX encoding only where AVX-VNNI is set, so that is checked apart).
bool isaSupported(Isa isa) {
    if (int(isa) < 0 || int(isa) > int(detectIsa())) return false;
    // Asked on every product (canRepack): cpuid once, not per call (in a virtual machine each
    // cpuid exits to the hypervisor; asking per call cost 7% of a decode step at avxvnni).
    static const bool vnni = cpuHas(Isa::AvxVnni);
    if (isa == Isa::AvxVnni) return vnni;
    return true;
}

Isa activeIsaLevel() { return Isa(activeLevel().load(std::memory_order_relaxed)); }

const char* activeIsa() { return isaName(activeIsaLevel()); }

bool forceIsa(Isa isa) {
    if (!isaSupported(isa)) return false;
    activeLevel().store(int(isa), std::memory_order_relaxed);
    return true;
}

bool matMulSupports(quant::Type t) {
    const quant::TypeInfo* info = quant::typeInfo(t);
    return info && info->canDequantize;
}

bool hasFastPath(quant::Type t, Isa isa) {
    if (!isaSupported(isa) || !matMulSupports(t)) return false;
    if (t == quant::Type::F32 || t == quant::Type::F16) return isa != Isa::Scalar;
    return kernelsFor(isa).actKind(t) != ActKind::Float;
}

Status matMul(const ref::Matrix& w, const float* x, int64_t n, float* y, ThreadPool* pool) {
    return matMul(w, x, n, y, pool, activeIsaLevel());
}

Status matMul(const ref::Matrix& w, const float* x, int64_t n, float* y, ThreadPool* pool,
              Isa isa) {
    if (!isaSupported(isa))
        return unsupported(std::string("matMul: this CPU cannot run the ") + isaName(isa) +
                           " kernels");
    const quant::TypeInfo* info = quant::typeInfo(w.type);
    if (!info || !info->canDequantize)
        return unsupported("matMul: no kernel for weight type " +
                           std::string(quant::typeName(w.type)));
    if (n < 0 || w.rows < 0 || w.cols <= 0)
        return invalidArgument("matMul: bad shape (n " + std::to_string(n) + ", rows " +
                               std::to_string(w.rows) + ", cols " + std::to_string(w.cols) + ")");
    if (w.cols % info->blockElems != 0)
        return invalidArgument("matMul: cols " + std::to_string(w.cols) +
                               " is not a multiple of the " + std::string(info->name) +
                               " block of " + std::to_string(info->blockElems));
    auto need = quant::rowBytes(w.type, uint64_t(w.cols));
    if (!need.isOk()) return need.status();
    if (w.rowBytes < *need)
        return invalidArgument("matMul: rowBytes " + std::to_string(w.rowBytes) + " < " +
                               std::to_string(*need) + " needed for " +
                               std::to_string(w.cols) + " columns");
    if (n == 0 || w.rows == 0) return Status::ok();
    if (!w.data || !x || !y) return invalidArgument("matMul: null data, x or y");

    const kernels::IsaKernels& k = kernelsFor(isa);
    kernels::Job job;
    job.w = w.data;
    job.type = w.type;
    job.cols = w.cols;
    job.rows = w.rows;
    job.rowBytes = w.rowBytes;
    job.x = x;
    job.n = n;
    job.y = y;
    job.act = k.actKind(w.type);

    const int64_t cols = w.cols;
    if (job.act == ActKind::Q8x32 || job.act == ActKind::Q8x256) {
        job.acts = kernels::quantizeActivations(job.act, x, n, cols, pool, &job.actRowBytes);
        if (!job.acts) return outOfMemory("matMul: activation buffer");
    }

    // Chunks of at least ~64k multiply-adds, and a multiple of 4 rows for the kernels' tiles.
    const int64_t work = std::max<int64_t>(1, cols * n);
    const int64_t grain = std::max<int64_t>(1, ((int64_t(1) << 16) / work + 3) / 4);
    auto rowsFn = [&](int64_t c0, int64_t c1) {
        k.rows(job, c0 * 4, std::min(w.rows, c1 * 4));
    };
    const int64_t quads = (w.rows + 3) / 4;
    if (pool) pool->parallelFor(quads, rowsFn, grain);
    else rowsFn(0, quads);
    return Status::ok();
}

} // namespace hearth::cpu
