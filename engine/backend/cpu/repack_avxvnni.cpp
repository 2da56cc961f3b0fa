// The AVX-VNNI level's kernels over repacked weights (compiled with -mavx2 -mfma -mf16c
// -mavxvnni; called only after a run-time check): repack_avx2_kernels.h with vpdpbusd.
#include "backend/cpu/repack_avx2_kernels.h"

namespace hearth::cpu::kernels {

static_assert(kVnni, "repack_avxvnni.cpp must be compiled with -mavxvnni");

void packedGroupsAvxVnni(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    packedGroups256(job, g0, g1, j0, j1);
}

} // namespace hearth::cpu::kernels
