# Compiler flags shared by every Hearth target: warnings, sanitizers, optional native tuning, ccache.
find_program(HEARTH_CCACHE ccache)
if(HEARTH_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER "${HEARTH_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${HEARTH_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${HEARTH_CCACHE}")
endif()

add_library(hearth_warnings INTERFACE)
target_compile_options(hearth_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-missing-field-initializers>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HEARTH_WERROR}>>:-Werror>)
# GCC 12 at -O3 reports string concatenations as overlapping memcpy (-Wrestrict, GCC bug 105651).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(hearth_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()

if(HEARTH_SANITIZE)
  string(REPLACE ";" "," _hearth_san "${HEARTH_SANITIZE}")
  add_compile_options(-fsanitize=${_hearth_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_hearth_san})
endif()

if(HEARTH_NATIVE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
