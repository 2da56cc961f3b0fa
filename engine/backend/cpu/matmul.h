// Fast multithreaded CPU matrix multiplication of GGUF weights (float and quantized) by a batch
// of float activation rows, with the instruction set chosen at run time.
#pragma once

#include "backend/cpu/ref_ops.h"
#include "hearth/status.h"

#include <cstdint>

namespace hearth::cpu {

class ThreadPool;

// Instruction-set levels of the kernels, lowest first.
//   Scalar: portable C++ (dequantize a row, float dot products), for any x86-64 or other CPU.
//   Avx2:    AVX2 + FMA + F16C; 8-bit integer dot products for quantized weights (Haswell, Zen 1-3).
//   AvxVnni: Avx2 plus AVX-VNNI (vpdpbusd on 256-bit registers: Intel client CPUs since Alder
//            Lake, which have no AVX-512); the Avx2 kernels, with VNNI dot products where they
//            help.
//   Avx512:  AVX-512 F/BW/VL/VNNI (Ice Lake server, Sapphire Rapids, Zen 4 and later).
enum class Isa { Scalar = 0, Avx2 = 1, AvxVnni = 2, Avx512 = 3 };

// "scalar", "avx2", "avxvnni", "avx512".
const char* isaName(Isa isa);

// The level named `name` ("scalar", "avx2", "avxvnni", "avx512"); false for another name.
bool isaFromName(const char* name, Isa* isa);

// Whether HEARTH_CPU_ISA names a level this CPU can run (or is unset): an unknown name, or a
// level the CPU lacks, is an InvalidArgument error saying what the CPU has. The kernels then run
// at the detected level; opening the CPU device returns this error.
Status isaEnvStatus();

// The best level this CPU (and OS) supports.
Isa detectIsa();

// Whether the CPU can run kernels of this level.
bool isaSupported(Isa isa);

// The level matMul uses when none is named: the detected one, lowered by the environment
// variable HEARTH_CPU_ISA=scalar|avx2|avxvnni|avx512 (read once) or by forceIsa. Never higher
// than detectIsa().
Isa activeIsaLevel();
const char* activeIsa(); // isaName(activeIsaLevel())

// Forces the default level (for tests and benchmarks). Returns false, changing nothing, when
// the CPU does not support it.
bool forceIsa(Isa isa);

// Whether `t` has a dedicated integer fast path (quantized activations) at this level; other
// supported types take the generic path (dequantize each weight row once, float dot products).
bool hasFastPath(quant::Type t, Isa isa);

// Whether matMul accepts weights of this type (any type with a reference dequantizer).
bool matMulSupports(quant::Type t);

// y[n][w.rows] = x[n][w.cols] · Wᵀ: y[j*w.rows + r] = Σ_c W[r][c] * x[j*w.cols + c].
// Quantized weights use activations quantized to 8 bits per call (per 32 values for the legacy
// types, IQ4_NL and MXFP4, per 256 for the K types, IQ4_XS, the 1-3 bit i-quants and TQ1_0/TQ2_0,
// at the AVX2 level or above), so results differ from ref::matVec by a few 1e-3 relative to the
// output scale; float weights (F32, F16, BF16) are exact up to float rounding. Rows are split
// over `pool` (nullptr runs on the calling thread); for a given level the result is bitwise the
// same whatever the thread count. x and y must not overlap. Errors: null pointers, n < 0, cols
// not a multiple of the type's block, rowBytes too small, an unsupported type, or an Isa the CPU
// lacks.
Status matMul(const ref::Matrix& w, const float* x, int64_t n, float* y, ThreadPool* pool);
Status matMul(const ref::Matrix& w, const float* x, int64_t n, float* y, ThreadPool* pool,
              Isa isa);

} // namespace hearth::cpu
