# The OpenAI-compatible server: protocol layer (no HTTP), HTTP with a fake engine, and the real
# engine on stories260K (labelled model).
hearth_add_test(test_server_protocol SOURCES test_server_protocol.cpp LABELS unit
                LIBS hearth_engine_internal)
hearth_add_test(test_server_http SOURCES test_server_http.cpp LABELS unit
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
hearth_add_test(test_server_model SOURCES test_server_model.cpp LABELS model
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 600)
# --models-dir: several models loaded within a count and a memory budget, LRU, keep-alive.
hearth_add_test(test_model_router SOURCES test_model_router.cpp LABELS model
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
hearth_add_test(test_server_speculation SOURCES test_server_speculation.cpp LABELS model
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
hearth_add_test(test_server_structured SOURCES test_server_structured.cpp LABELS unit
                LIBS hearth_engine_internal)
hearth_add_test(test_server_ollama SOURCES test_server_ollama.cpp LABELS unit
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
# The Anthropic Messages and OpenAI Responses APIs: parsing, and HTTP with a fake engine.
hearth_add_test(test_server_anthropic SOURCES test_server_anthropic.cpp LABELS unit
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
hearth_add_test(test_server_responses SOURCES test_server_responses.cpp LABELS unit
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
# A tool call cut by the token limit, in every dialect: a call as far as written, never markup.
hearth_add_test(test_server_cut_calls SOURCES test_server_cut_calls.cpp LABELS unit
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 120)
hearth_add_test(test_server_embeddings SOURCES test_server_embeddings.cpp LABELS unit
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 300)
# One request through every dialect: the same tokens, finish reason, stop string and tool call.
hearth_add_test(test_server_dialects SOURCES test_server_dialects.cpp LABELS model
                LIBS hearth_engine_internal hearth_httplib TIMEOUT 120)
