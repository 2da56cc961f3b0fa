# GGUF reader/writer tests.
hearth_add_test(test_gguf SOURCES test_gguf.cpp gguf_builder.h LABELS unit LIBS hearth_engine)
# Split models (gguf-split parts) written and opened as one; the engine runs one.
hearth_add_test(test_gguf_split SOURCES test_gguf_split.cpp LABELS unit LIBS hearth_engine)
