# Chat-template engine tests: golden renderings of the shared templates, interpreter unit tests,
# and a mutation fuzz test.
hearth_add_test(test_chat_template_golden SOURCES test_chat_template_golden.cpp LABELS unit LIBS hearth_engine)
hearth_add_test(test_jinja SOURCES test_jinja.cpp LABELS unit LIBS hearth_engine)
hearth_add_test(test_jinja_limits SOURCES test_jinja_limits.cpp LABELS unit LIBS hearth_engine_internal)
# hearth-cli template is tested in-process: its source is compiled into the test.
hearth_add_test(test_chat_template SOURCES test_chat_template.cpp ${CMAKE_SOURCE_DIR}/app/cli/cmd_template.cpp
                LABELS unit LIBS hearth_engine_internal)
target_include_directories(tests_unit PRIVATE ${CMAKE_SOURCE_DIR}/app/cli)
hearth_add_test(test_chat_template_fuzz SOURCES test_chat_template_fuzz.cpp LABELS unit LIBS hearth_engine TIMEOUT 300)
