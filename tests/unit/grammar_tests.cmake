# Constrained decoding: the GBNF parser and matcher, token masks against a brute-force oracle.
hearth_add_test(test_grammar SOURCES test_grammar.cpp LABELS unit LIBS hearth_engine_internal)
