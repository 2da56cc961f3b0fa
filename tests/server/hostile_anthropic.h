// A corpus of malformed and hostile request bodies for the Anthropic Messages endpoints
// (/v1/messages, /v1/messages/count_tokens) and the OpenAI Responses endpoint (/v1/responses):
// bad JSON, wrong types field by field, bad content blocks and input items, deep and huge
// bodies, invalid UTF-8, and what needs server state. Every one must be refused with a 4xx in
// its API's error shape, never a crash.
#pragma once

#include <string>
#include <vector>

namespace hearth::test {

enum class NewApi { Messages, CountTokens, Responses };

struct HostileApiBody {
    NewApi api = NewApi::Messages;
    std::string body;
};

inline const char* newApiPath(NewApi api) {
    switch (api) {
    case NewApi::Messages: return "/v1/messages";
    case NewApi::CountTokens: return "/v1/messages/count_tokens";
    case NewApi::Responses: return "/v1/responses";
    }
    return "/";
}

inline std::vector<HostileApiBody> hostileApiBodies() {
    std::vector<HostileApiBody> out;
    auto all = [&](const std::string& b) {
        out.push_back({NewApi::Messages, b});
        out.push_back({NewApi::CountTokens, b});
        out.push_back({NewApi::Responses, b});
    };
    // Not JSON, not an object, invalid UTF-8, deep and huge.
    const char* broken[] = {
        "", " ", "{", "}", "[", "null", "true", "0", "\"text\"", "[]", "[{}]", "{\"a\":1,}",
        "{\"a\":1}x", "{}{}", "{'model':'x'}", "{\"max_tokens\":NaN}", "{\"a\":\"\x01\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\xff\xfe\"}", "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xe2\x82\"}", "\xef\xbb\xbf{}", "{a:1}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]",
        "{\"input\":\"hi\"", "{}",
    };
    for (const char* b : broken) all(b);
    all(std::string("{\"a\":\"\0\"}", 9));
    all(std::string(100000, '['));
    all(std::string(5000, '{'));
    all("{\"messages\":" + std::string(70, '[') + std::string(70, ']') + "}");
    all("{\"input\":" + std::string(70, '[') + std::string(70, ']') + "}");
    all("{\"max_tokens\":5,\"input\":\"" + std::string(9u << 20, 'x') + "\"}");
    all("{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(9u << 20, 'a') + "\"}]}");

    // Messages: field by field on top of a valid body.
    const std::string hi = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    auto msg = [&](const std::string& fields) { out.push_back({NewApi::Messages, "{" + fields + "}"}); };
    auto both = [&](const std::string& fields) {
        out.push_back({NewApi::Messages, "{\"max_tokens\":8," + fields + "}"});
        out.push_back({NewApi::CountTokens, "{" + fields + "}"});
    };
    msg(hi);                                  // max_tokens missing
    const char* badMax[] = {"0", "-1", "1.5", "\"8\"", "true", "[]", "{}", "1e12", "2147483648",
                            "99999999999999999999999"};
    for (const char* m : badMax) msg(hi + ",\"max_tokens\":" + m);
    const char* badMessages[] = {
        "\"messages\":null", "\"messages\":\"hi\"", "\"messages\":1", "\"messages\":{}",
        "\"messages\":[]", "\"messages\":[1]", "\"messages\":[null]", "\"messages\":[[]]",
        "\"messages\":[{}]", "\"messages\":[{\"role\":1,\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"\",\"content\":\"x\"}]", "\"messages\":[{\"role\":\"user\"}]",
        "\"messages\":[{\"content\":\"x\"}]", "\"messages\":[{\"role\":\"user\",\"content\":1}]",
        "\"messages\":[{\"role\":\"user\",\"content\":{}}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[1]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":5}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":5,\"text\":\"x\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"@@@\"}}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"text/html\",\"data\":\"AAAA\"}}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"http://x\"}}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":[]}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":{}}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"wizard\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":5}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":5}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\"}]}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"is_error\":\"yes\"}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\"}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":1,\"name\":\"f\",\"input\":{}}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"\",\"input\":{}}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":\"{}\"}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\"}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"image\"}]}]",
    };
    for (const char* m : badMessages) both(m);
    {
        std::string many = "\"messages\":[";
        for (int i = 0; i < 5000; ++i) many += std::string(i ? "," : "") + "{\"role\":\"user\",\"content\":\"x\"}";
        both(many + "]");
    }
    const char* badFields[] = {
        "\"model\":1", "\"model\":[]", "\"system\":1", "\"system\":{}", "\"system\":[1]",
        "\"system\":[{\"type\":\"image\"}]", "\"system\":[{\"type\":\"text\"}]",
        "\"system\":[{\"type\":\"text\",\"text\":[]}]",
        "\"temperature\":\"1\"", "\"temperature\":-0.1", "\"temperature\":1.5", "\"temperature\":true",
        "\"temperature\":1e400", "\"top_p\":1.1", "\"top_p\":-1", "\"top_p\":\"x\"", "\"top_k\":-1",
        "\"top_k\":1.5", "\"top_k\":\"5\"", "\"top_k\":1e10", "\"stop_sequences\":\"x\"",
        "\"stop_sequences\":[1]", "\"stop_sequences\":[\"\"]", "\"stop_sequences\":{}",
        "\"stop_sequences\":[null]",
        "\"stop_sequences\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]",
        "\"metadata\":\"x\"", "\"metadata\":[]", "\"tools\":\"x\"", "\"tools\":{}", "\"tools\":[1]",
        "\"tools\":[{}]", "\"tools\":[{\"name\":\"\"}]", "\"tools\":[{\"name\":5,\"input_schema\":{}}]",
        "\"tools\":[{\"name\":\"f\"}]", "\"tools\":[{\"name\":\"f\",\"input_schema\":\"x\"}]",
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{},\"description\":1}]",
        "\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]",
        "\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]", "\"tools\":[{\"type\":1,\"name\":\"f\",\"input_schema\":{}}]",
        "\"thinking\":true", "\"thinking\":{\"type\":5}", "\"thinking\":{\"type\":\"on\"}",
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":\"5\"}",
        "\"tool_choice\":\"auto\"", "\"tool_choice\":{}", "\"tool_choice\":{\"type\":\"maybe\"}",
        "\"tool_choice\":{\"type\":\"any\"}", "\"tool_choice\":{\"type\":\"tool\"}",
        "\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\"}",
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"g\"}",
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":\"no\"}",
    };
    for (const char* f : badFields) both(hi + "," + f);
    msg(hi + ",\"max_tokens\":8,\"stream\":\"yes\"");
    msg(hi + ",\"max_tokens\":8,\"stream\":1");

    // Responses.
    auto resp = [&](const std::string& fields) { out.push_back({NewApi::Responses, "{" + fields + "}"}); };
    const char* badInput[] = {
        "", "\"input\":null", "\"input\":1", "\"input\":{}", "\"input\":[]", "\"input\":[1]",
        "\"input\":[null]", "\"input\":[[]]", "\"input\":[{}]", "\"input\":[{\"role\":\"user\"}]",
        "\"input\":[{\"role\":\"wizard\",\"content\":\"x\"}]", "\"input\":[{\"role\":1,\"content\":\"x\"}]",
        "\"input\":[{\"role\":\"user\",\"content\":1}]", "\"input\":[{\"role\":\"user\",\"content\":[1]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\"}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":1}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"http://x\"}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":5}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"file_id\":\"f\"}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,@@\"}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_id\":\"f\"}]}]",
        "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"wizard\"}]}]",
        "\"input\":[{\"type\":\"message\"}]", "\"input\":[{\"type\":5}]", "\"input\":[{\"type\":\"wizard\"}]",
        "\"input\":[{\"type\":\"function_call\"}]",
        "\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\"}]",
        "\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":{}}]",
        "\"input\":[{\"type\":\"function_call\",\"call_id\":1,\"name\":\"f\",\"arguments\":\"{}\"}]",
        "\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"\",\"arguments\":\"{}\"}]",
        "\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\"}]",
        "\"input\":[{\"type\":\"function_call_output\",\"output\":\"x\"}]",
        "\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":5}]",
        "\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]",
        "\"input\":[{\"type\":\"web_search_call\",\"id\":\"ws_1\"}]",
    };
    for (const char* i : badInput) resp(i);
    {
        std::string many = "\"input\":[";
        for (int i = 0; i < 5000; ++i) many += std::string(i ? "," : "") + "{\"role\":\"user\",\"content\":\"x\"}";
        resp(many + "]");
    }
    const char* badResp[] = {
        "\"previous_response_id\":\"resp_1\"", "\"store\":true", "\"background\":true",
        "\"store\":\"no\"", "\"background\":1", "\"conversation\":\"conv_1\"", "\"prompt\":{\"id\":\"p\"}",
        "\"model\":1", "\"instructions\":1", "\"instructions\":[]", "\"max_output_tokens\":0",
        "\"max_output_tokens\":-1", "\"max_output_tokens\":\"5\"", "\"max_output_tokens\":1.5",
        "\"max_output_tokens\":1e12", "\"temperature\":2.5", "\"temperature\":\"1\"", "\"top_p\":2",
        "\"stream\":\"yes\"", "\"user\":1", "\"parallel_tool_calls\":\"x\"", "\"metadata\":1",
        "\"tools\":\"x\"", "\"tools\":[1]", "\"tools\":[{}]", "\"tools\":[{\"type\":\"function\"}]",
        "\"tools\":[{\"type\":\"function\",\"name\":\"\"}]", "\"tools\":[{\"type\":\"function\",\"name\":5}]",
        "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":\"x\"}]",
        "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"strict\":\"x\"}]",
        "\"tools\":[{\"type\":\"web_search\"}]", "\"tools\":[{\"type\":\"web_search_preview\"}]",
        "\"tools\":[{\"type\":\"file_search\",\"vector_store_ids\":[\"v\"]}]",
        "\"tools\":[{\"type\":\"code_interpreter\"}]", "\"tool_choice\":\"maybe\"", "\"tool_choice\":1",
        "\"tool_choice\":\"required\"", "\"tool_choice\":{}", "\"tool_choice\":{\"type\":\"file_search\"}",
        "\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":{\"type\":\"function\",\"name\":\"g\"}",
        "\"reasoning\":1", "\"reasoning\":{\"effort\":\"max\"}", "\"reasoning\":{\"effort\":1}",
        "\"text\":1", "\"text\":{\"format\":1}", "\"text\":{\"format\":{}}",
        "\"text\":{\"format\":{\"type\":\"yaml\"}}", "\"text\":{\"format\":{\"type\":\"json_schema\"}}",
        "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"x\"}}",
        "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"x\",\"schema\":\"s\"}}",
    };
    for (const char* f : badResp) resp("\"input\":\"hi\"," + std::string(f));
    return out;
}

} // namespace hearth::test
