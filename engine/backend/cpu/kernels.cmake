# The optimized CPU kernels: thread pool, matMul and the recurrent ops, with one file per instruction-set level.
# The SIMD files get their ISA flags per file; the code picks a level at run time.
target_sources(hearth_engine PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/thread_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/matmul.cpp
  ${CMAKE_CURRENT_LIST_DIR}/matmul_scalar.cpp
  ${CMAKE_CURRENT_LIST_DIR}/repack.cpp
  ${CMAKE_CURRENT_LIST_DIR}/recurrent_fast.cpp)
# recurrent_fast.cpp's per-level copies pass vectors only to inlined helpers (fast_math.h).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/recurrent_fast.cpp TARGET_DIRECTORY hearth_engine PROPERTIES
  COMPILE_OPTIONS "-Wno-psabi")
# matmul.cpp's activation quantizers are compiled per level (with FMA at avx2 and avx512) and must
# round x · (127 / amax) exactly as the definition does: no contraction into a fused multiply-add.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/matmul.cpp TARGET_DIRECTORY hearth_engine PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off")
# The SIMD kernels at -O3 whatever the build type but Debug: their tiles keep per-token sums in
# small arrays and loops of constant length, which only GCC's -O3 unrolls into registers. At -O2
# (RelWithDebInfo, distributions' default flags) the 256-bit tiles of 4-5 tokens kept their sums
# in memory and ran 10-60x slower than at -O3 (bench_matmul rows, Zen 5).
set(hearth_kernel_opt "$<$<NOT:$<CONFIG:Debug>>:-O3>")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  target_sources(hearth_engine PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/matmul_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/matmul_iq_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/matmul_avx512.cpp
    ${CMAKE_CURRENT_LIST_DIR}/repack_avx512.cpp
    ${CMAKE_CURRENT_LIST_DIR}/repack_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/repack_avxvnni.cpp
    ${CMAKE_CURRENT_LIST_DIR}/recurrent_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/recurrent_avx512.cpp)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/matmul_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/matmul_iq_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/repack_avx2.cpp
    ${CMAKE_CURRENT_LIST_DIR}/recurrent_avx2.cpp
    TARGET_DIRECTORY hearth_engine PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;${hearth_kernel_opt}")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/repack_avxvnni.cpp
    TARGET_DIRECTORY hearth_engine PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni;${hearth_kernel_opt}")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/matmul_avx512.cpp
    ${CMAKE_CURRENT_LIST_DIR}/repack_avx512.cpp
    ${CMAKE_CURRENT_LIST_DIR}/recurrent_avx512.cpp
    TARGET_DIRECTORY hearth_engine PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;${hearth_kernel_opt}")
endif()
