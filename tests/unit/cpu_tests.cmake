# Optimized CPU kernel tests (matMul at every instruction-set level, thread pool, the recurrent ops).
hearth_add_test(test_cpu_matmul SOURCES test_cpu_matmul.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_cpu_repack SOURCES test_cpu_repack.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_cpu_activations SOURCES test_cpu_activations.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_cpu_kv_store SOURCES test_cpu_kv_store.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_recurrent_ops SOURCES test_recurrent_ops.cpp LABELS unit LIBS hearth_engine_internal)
# The 256-bit and AVX-512 kernels' software prefetch survives the compiler (x86-64 with binutils).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_OBJDUMP AND CMAKE_AR)
  add_test(NAME cpu_kernel_prefetch
           COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:hearth_engine> -DOBJDUMP=${CMAKE_OBJDUMP}
                   -DCMAKE_AR=${CMAKE_AR} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_kernel_prefetch.cmake)
  set_tests_properties(cpu_kernel_prefetch PROPERTIES LABELS unit TIMEOUT 60)
endif()
