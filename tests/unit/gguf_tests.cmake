# GGUF reader/writer tests.
hearth_add_test(test_gguf SOURCES test_gguf.cpp gguf_builder.h LABELS unit LIBS hearth_engine)
