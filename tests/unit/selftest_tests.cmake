# The device self-test: the library against a corrupted device and the model runner's check
# (test_selftest), and `hearth-cli selftest` as CI runs it on the CPU and, when built, on Vulkan.
hearth_add_test(test_selftest SOURCES test_selftest.cpp LABELS unit LIBS hearth_engine_internal NEEDS hearth-cli)

add_test(NAME selftest_cpu COMMAND $<TARGET_FILE:hearth-cli> selftest --device cpu)
set_tests_properties(selftest_cpu PROPERTIES LABELS unit TIMEOUT 300)

if(HEARTH_HAVE_VULKAN)
  # "Cannot open vulkan:0" (exit 2) is a skip (77) only when `hearth-cli devices` lists no
  # vulkan:0 either; a listed device must open and pass.
  add_test(NAME selftest_vulkan
           COMMAND sh -c "\"$1\" selftest --device vulkan:0; rc=$?; if [ $rc -eq 2 ] && ! \"$1\" devices | grep -q '^vulkan:0 '; then echo 'no vulkan:0 device: skipped'; exit 77; fi; exit $rc"
                   sh $<TARGET_FILE:hearth-cli>)
  set_tests_properties(selftest_vulkan PROPERTIES LABELS vulkan SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
