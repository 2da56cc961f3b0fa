# The GGUF reader and model binding fuzzer (clang's libFuzzer; sanitizers come from HEARTH_SANITIZE).
add_executable(fuzz_gguf ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_gguf.cpp)
target_compile_options(fuzz_gguf PRIVATE -fsanitize=fuzzer)
target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer)
target_link_libraries(fuzz_gguf PRIVATE hearth_fuzz_engine)
