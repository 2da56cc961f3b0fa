# Constrained decoding: the GBNF parser and matcher, token masks against a brute-force oracle;
# JSON Schema to GBNF (test_json_schema).
hearth_add_test(test_grammar SOURCES test_grammar.cpp LABELS unit LIBS hearth_engine_internal COST 35)
hearth_add_test(test_json_schema SOURCES test_json_schema.cpp test_json_schema_cases.cpp LABELS unit LIBS hearth_engine_internal)
