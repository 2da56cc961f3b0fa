# bench_tokenizer: our encode speed on a text file (bench/tokenizer.sh compares it with llama.cpp's).
add_executable(bench_tokenizer ${CMAKE_CURRENT_LIST_DIR}/bench_tokenizer.cpp)
target_link_libraries(bench_tokenizer PRIVATE hearth_engine hearth_warnings)
