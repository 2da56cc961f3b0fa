# Prints what this configuration will build.
message(STATUS "Hearth ${PROJECT_VERSION}: GUI=${HEARTH_GUI} tests=${HEARTH_BUILD_TESTS} "
               "vulkan=${HEARTH_HAVE_VULKAN} cuda=${HEARTH_HAVE_CUDA} fuzz=${HEARTH_FUZZ} "
               "sanitize='${HEARTH_SANITIZE}' test-data=${HEARTH_TEST_DATA}")
