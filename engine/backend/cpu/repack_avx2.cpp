// The AVX2 level's kernels over repacked weights (compiled with -mavx2 -mfma -mf16c; called only
// after a run-time check): repack_avx2_kernels.h without VNNI.
#include "backend/cpu/repack_avx2_kernels.h"

namespace hearth::cpu::kernels {

static_assert(!kVnni, "repack_avx2.cpp must be compiled without -mavxvnni");

void packedGroupsAvx2(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    packedGroups256(job, g0, g1, j0, j1);
}

void widenIQ4XSActsAvx2(const PackedJob& job, int64_t j0, int64_t j1, int16_t* out) {
    widenActs(job, j0, j1 - j0, out + j0 * job.cols);
}

} // namespace hearth::cpu::kernels
