# Checks that the compiled repacked-weight kernels still issue their software prefetches: GCC
# once dropped every call of the 256-bit kernels' prefetch helper (a function with no effect it
# could see, so its calls were removed as dead code), and decode ran at half the memory bandwidth
# with nothing else amiss. Run as: cmake -DLIB=<libhearth_engine.a> -DOBJDUMP=<objdump> -P this.
if(NOT LIB OR NOT OBJDUMP)
  message(FATAL_ERROR "LIB and OBJDUMP must be given")
endif()
foreach(member repack_avx2.cpp.o repack_avxvnni.cpp.o repack_avx512.cpp.o)
  execute_process(COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/prefetch_check)
  execute_process(COMMAND ${CMAKE_AR} x ${LIB} ${member}
                  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/prefetch_check RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${CMAKE_CURRENT_BINARY_DIR}/prefetch_check/${member})
    message(FATAL_ERROR "${member}: not found in ${LIB}")
  endif()
  execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn ${CMAKE_CURRENT_BINARY_DIR}/prefetch_check/${member}
                  OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} failed on ${member}")
  endif()
  string(REGEX MATCHALL "prefetcht0" hits "${text}")
  list(LENGTH hits count)
  if(count LESS 8)
    message(FATAL_ERROR "${member}: ${count} prefetcht0 instructions; its kernels lost their software prefetch")
  endif()
  message(STATUS "${member}: ${count} prefetcht0 instructions")
endforeach()
