# CPU kernel benchmark: reference matVec against matMul at each instruction-set level.
add_executable(bench_matmul ${CMAKE_CURRENT_LIST_DIR}/bench_matmul.cpp ${CMAKE_CURRENT_LIST_DIR}/int8_ceiling.cpp)
target_link_libraries(bench_matmul PRIVATE hearth_engine_internal hearth_warnings)

# CPU paged attention: ns per (query head, position) on prompt-chunk and decode shapes.
add_executable(bench_attention ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cpp)
target_link_libraries(bench_attention PRIVATE hearth_engine_internal hearth_warnings)

# Decode's weight stream alone (1B-shaped repacked matrices, one token) against a plain read.
add_executable(bench_decode_stream ${CMAKE_CURRENT_LIST_DIR}/bench_decode_stream.cpp)
target_link_libraries(bench_decode_stream PRIVATE hearth_engine_internal hearth_warnings)
