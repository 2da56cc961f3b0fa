# CPU kernel benchmark: reference matVec against matMul at each instruction-set level.
add_executable(bench_matmul ${CMAKE_CURRENT_LIST_DIR}/bench_matmul.cpp)
target_link_libraries(bench_matmul PRIVATE hearth_engine_internal hearth_warnings)
