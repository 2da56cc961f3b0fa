# Sources of the OpenAI-compatible server, and cpp-httplib (Debian ships it as a shared library
# whose header must be compiled with the same feature macros as the library).
# hearth_server is a library of its own over the engine's public headers: its files include only
# "hearth/..." and their own "server/..." headers (checked here, at configure time).
add_library(hearth_server STATIC)
target_include_directories(hearth_server PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(hearth_server PUBLIC hearth_engine nlohmann_json::nlohmann_json PRIVATE hearth_warnings)
file(GLOB HEARTH_SERVER_FILES ${CMAKE_CURRENT_LIST_DIR}/*.cpp ${CMAKE_CURRENT_LIST_DIR}/*.h)
include(HearthLayering)
hearth_check_includes(FILES ${HEARTH_SERVER_FILES} ALLOWED "^#include (\"(hearth|server)/|<)"
                      WHY "engine/server may include only the engine's public headers (hearth/...) and its own (server/...)")
target_sources(hearth_server PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/api_error.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_fields.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openai_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openai_messages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_parts.cpp
  ${CMAKE_CURRENT_LIST_DIR}/chat_images.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openai_convert.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openai_response.cpp
  ${CMAKE_CURRENT_LIST_DIR}/structured_output.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tool_call_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/security.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/generation_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/chunked_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/progress_log.cpp
  ${CMAKE_CURRENT_LIST_DIR}/http_server.cpp
  ${CMAKE_CURRENT_LIST_DIR}/generation_driver.cpp
  ${CMAKE_CURRENT_LIST_DIR}/generation_setup.cpp
  ${CMAKE_CURRENT_LIST_DIR}/handlers_generate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/handlers_misc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/library_names.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_router.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ollama_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ollama_response.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ollama_handlers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ollama_library.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pull_command.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rerank.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embeddings_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embeddings_handlers.cpp)

if(NOT TARGET hearth_httplib)
  add_library(hearth_httplib INTERFACE)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(HEARTH_HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
  endif()
  if(HEARTH_HTTPLIB_FOUND)
    target_link_libraries(hearth_httplib INTERFACE PkgConfig::HEARTH_HTTPLIB)
  else()
    find_path(HEARTH_HTTPLIB_INCLUDE httplib.h REQUIRED)
    find_library(HEARTH_HTTPLIB_LIBRARY NAMES cpp-httplib)
    target_include_directories(hearth_httplib INTERFACE ${HEARTH_HTTPLIB_INCLUDE})
    if(HEARTH_HTTPLIB_LIBRARY)
      # The packaged library is built with these; the header must agree with it.
      target_link_libraries(hearth_httplib INTERFACE ${HEARTH_HTTPLIB_LIBRARY})
      target_compile_definitions(hearth_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT
                                 CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
    endif()
  endif()
  find_package(OpenSSL QUIET)
  if(OpenSSL_FOUND)
    target_link_libraries(hearth_httplib INTERFACE OpenSSL::SSL OpenSSL::Crypto)
  endif()
endif()
target_link_libraries(hearth_server PRIVATE hearth_httplib)

# The Anthropic Messages API and the stateless OpenAI Responses API (over the generation driver).
target_sources(hearth_server PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/anthropic_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/anthropic_handlers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/responses_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/responses_handlers.cpp)

# The gateway: upstream OpenAI-compatible servers' models listed and their requests relayed.
target_sources(hearth_server PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/upstream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/upstream_forward.cpp)
