// HEARTH_CLONES: marks a CPU kernel to be compiled once per instruction set level (x86-64-v4, v3
// and the baseline) with the best clone picked at load time; nothing where GCC's target_clones is
// unavailable (other compilers, architectures or systems).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define HEARTH_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HEARTH_CLONES
#endif
