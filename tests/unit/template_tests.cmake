# Chat-template engine tests: golden renderings of the shared templates, interpreter unit tests,
# and a mutation fuzz test.
hearth_add_test(test_chat_template_golden SOURCES test_chat_template_golden.cpp LABELS unit LIBS hearth_engine)
hearth_add_test(test_jinja SOURCES test_jinja.cpp LABELS unit LIBS hearth_engine)
