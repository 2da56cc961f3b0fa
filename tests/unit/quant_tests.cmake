# Quantization format tests.
hearth_add_test(test_quant SOURCES test_quant.cpp LABELS unit LIBS hearth_engine_internal)
