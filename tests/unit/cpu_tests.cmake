# Optimized CPU kernel tests (matMul at every instruction-set level, thread pool, the recurrent ops).
hearth_add_test(test_cpu_matmul SOURCES test_cpu_matmul.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_cpu_repack SOURCES test_cpu_repack.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_cpu_activations SOURCES test_cpu_activations.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_cpu_kv_store SOURCES test_cpu_kv_store.cpp LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_recurrent_ops SOURCES test_recurrent_ops.cpp LABELS unit LIBS hearth_engine_internal)
