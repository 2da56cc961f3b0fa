# The device self-test: the library against a corrupted device and the model runner's check
# (test_selftest), and `hearth-cli selftest` as CI runs it on the CPU. Every GPU device found runs
# the full self-test in tests/device (test_forward_devices::selftestPassesPart1-3).
hearth_add_test(test_selftest SOURCES test_selftest.cpp LABELS unit LIBS hearth_engine_internal NEEDS hearth-cli)

add_test(NAME selftest_cpu COMMAND $<TARGET_FILE:hearth-cli> selftest --device cpu)
set_tests_properties(selftest_cpu PROPERTIES LABELS unit TIMEOUT 300)
