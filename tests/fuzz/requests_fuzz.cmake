# The request-parsing fuzzer: OpenAI and Ollama bodies, grammars, schemas, streamed output readers.
add_executable(fuzz_requests ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_requests.cpp)
target_compile_options(fuzz_requests PRIVATE -fsanitize=fuzzer)
target_link_options(fuzz_requests PRIVATE -fsanitize=fuzzer)
target_link_libraries(fuzz_requests PRIVATE hearth_fuzz_engine)
