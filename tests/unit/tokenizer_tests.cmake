# Tokenizer tests: text layer (no data), small hand-made vocabularies, the shared vocab files
# with their test vectors, llama.cpp's own vocab files and tokenizer (HEARTH_REF), and a
# slow-labelled speed report.
hearth_add_test(test_tokenizer_text SOURCES test_tokenizer_text.cpp LABELS unit
  LIBS hearth_engine_internal)
hearth_add_test(test_tokenizer_small SOURCES test_tokenizer_small.cpp test_tokenizer_support.h
  LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_tokenizer_load SOURCES test_tokenizer_load.cpp test_tokenizer_support.h
  LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_tokenizer_vocab SOURCES test_tokenizer_vocab.cpp test_tokenizer_support.h
  LABELS unit LIBS hearth_engine_internal)
hearth_add_test(test_tokenizer_ref SOURCES test_tokenizer_ref.cpp test_tokenizer_support.h
  LABELS unit LIBS hearth_engine_internal COST 25)
hearth_add_test(test_tokenizer_speed SOURCES test_tokenizer_speed.cpp test_tokenizer_support.h
  LABELS slow LIBS hearth_engine_internal)
