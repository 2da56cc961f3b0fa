# bench_grammar: token-mask cost per token on a vocabulary, and decoding with and without a grammar.
add_executable(bench_grammar ${CMAKE_CURRENT_LIST_DIR}/bench_grammar.cpp)
target_link_libraries(bench_grammar PRIVATE hearth_engine_internal hearth_warnings)
