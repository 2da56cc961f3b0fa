# bench_membw: read bandwidth, the bound for decode speed.
add_executable(bench_membw ${CMAKE_CURRENT_LIST_DIR}/bench_membw.cpp)
target_link_libraries(bench_membw PRIVATE Threads::Threads hearth_warnings)
target_compile_options(bench_membw PRIVATE -O2)
