// HEARTH_ISA_DISPATCH: a CPU kernel written once as plain C++ and compiled once per instruction
// set level (AVX-512, AVX2 + FMA + F16C, the baseline), each copy with everything it calls
// inlined (flatten), and called by the kernels' active level (activeIsaLevel: the detected one,
// HEARTH_CPU_ISA or forceIsa), so that a lower level forced on a bigger CPU runs that level's
// code for these too, as the matMul kernels do. A plain function where GCC's target attributes
// are unavailable (other compilers, architectures or systems).
#pragma once

#include "backend/cpu/matmul.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define HEARTH_TARGET_AVX512 \
    __attribute__((target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512vl,avx512dq,avx512cd"), flatten))
#define HEARTH_TARGET_AVX2 __attribute__((target("avx2,fma,f16c"), flatten))
// Defines `ret name params` as avx512Body(args) at the AVX-512 level (32 zmm registers),
// avx2Body(args) at the AVX2 levels (16 ymm) and baseBody(args) otherwise (16 xmm); the bodies
// are inline functions.
#define HEARTH_ISA_DISPATCH3(ret, name, params, args, avx512Body, avx2Body, baseBody)        \
    HEARTH_TARGET_AVX512 static ret name##Avx512 params { return avx512Body args; }        \
    HEARTH_TARGET_AVX2 static ret name##Avx2 params { return avx2Body args; }              \
    __attribute__((flatten)) static ret name##Base params { return baseBody args; }        \
    ret name params {                                                                      \
        switch (::hearth::cpu::activeIsaLevel()) {                                         \
        case ::hearth::cpu::Isa::Avx512: return name##Avx512 args;                         \
        case ::hearth::cpu::Isa::AvxVnni:                                                  \
        case ::hearth::cpu::Isa::Avx2: return name##Avx2 args;                             \
        case ::hearth::cpu::Isa::Scalar: break;                                            \
        }                                                                                  \
        return name##Base args;                                                            \
    }
#else
#define HEARTH_ISA_DISPATCH3(ret, name, params, args, avx512Body, avx2Body, baseBody) \
    ret name params { return baseBody args; }
#endif
// The same body at every level.
#define HEARTH_ISA_DISPATCH(ret, name, params, args, body) HEARTH_ISA_DISPATCH3(ret, name, params, args, body, body, body)
