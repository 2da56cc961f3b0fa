// A corpus of malformed and hostile request bodies for the OpenAI endpoints: bad JSON, wrong
// types, out-of-range and huge numbers, invalid UTF-8, deep nesting, oversized strings and
// missing fields. Every one must be refused with a 4xx error object, never a crash.
#pragma once

#include <string>
#include <vector>

namespace hearth::test {

struct HostileBody {
    bool chat = true; // /v1/chat/completions, else /v1/completions
    std::string body;
};

inline std::vector<HostileBody> hostileBodies() {
    std::vector<HostileBody> out;
    auto both = [&](const std::string& b) {
        out.push_back({true, b});
        out.push_back({false, b});
    };
    // Not JSON, or not an object.
    const char* broken[] = {
        "", " ", "{", "}", "[", "]", "null", "true", "false", "0", "-1", "1e999", "\"text\"",
        "[]", "[{}]", "{\"messages\":", "{'messages':[]}", "{\"a\":1,}", "{\"a\":1}x", "{}{}",
        "{\"temperature\":NaN}", "{\"temperature\":Infinity}", "{\"temperature\":-Infinity}",
        "{\"n\":-}", "{\"n\":01}", "{\"n\":1.}", "{\"n\":.5}", "{\"n\":+1}", "{\"n\":0x10}",
        "{\"a\":\"\x01\"}", "{\"a\":\"tab\there\"}", "{\"a\":\"\\x41\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\\ud800\"}", "{\"a\":\"\xff\xfe\"}",
        "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":\"\xe2\x82\"}", "\xef\xbb\xbf{}", "{\"a\":undefined}", "{a:1}", "{\"a\" 1}",
        "{\"a\":[1,2}", "{\"a\":{\"b\":]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]",
    };
    for (const char* b : broken) both(b);
    both(std::string("{\"a\":\"\0\"}", 9)); // a raw NUL inside a string
    both(std::string("\0", 1));
    // Deep nesting and sheer size.
    both(std::string(100000, '['));
    both(std::string(5000, '[') + std::string(5000, ']'));
    both("{\"a\":" + std::string(200, '{') + std::string(200, '}') + "}");
    both("{\"messages\":" + std::string(70, '[') + std::string(70, ']') + "}");
    both("{\"prompt\":\"" + std::string(10u << 20, 'x') + "\"}");
    both("{\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(9u << 20, 'a') + "\"}]}");

    // Chat: wrong values field by field, on top of a valid request.
    const std::string msgs = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    auto chat = [&](const std::string& fields) { out.push_back({true, "{" + fields + "}"}); };
    auto chatWith = [&](const std::string& field) { chat(msgs + "," + field); };
    const char* badMessages[] = {
        "", "\"messages\":null", "\"messages\":\"hi\"", "\"messages\":1", "\"messages\":{}",
        "\"messages\":[]", "\"messages\":[1]", "\"messages\":[null]", "\"messages\":[[]]",
        "\"messages\":[{}]", "\"messages\":[{\"role\":1,\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"\",\"content\":\"x\"}]", "\"messages\":[{\"role\":\"user\"}]",
        "\"messages\":[{\"content\":\"x\"}]", "\"messages\":[{\"role\":\"user\",\"content\":1}]",
        "\"messages\":[{\"role\":\"user\",\"content\":true}]",
        "\"messages\":[{\"role\":\"user\",\"content\":{}}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[1]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":5}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":7,\"text\":\"x\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x\"}}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"name\":5}]",
        "\"messages\":[{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":5}]",
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":\"x\"}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[1]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":1}}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":5}}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":7,\"function\":{\"name\":\"f\"}}]}]",
        "\"messages\":[{\"role\":\"system\"}]", "\"messages\":[{\"role\":\"tool\"}]",
    };
    for (const char* m : badMessages) chat(m);
    {
        std::string many = "\"messages\":[";
        for (int i = 0; i < 5000; ++i) many += std::string(i ? "," : "") + "{\"role\":\"user\",\"content\":\"x\"}";
        chat(many + "]");
    }
    const char* badFields[] = {
        "\"model\":1", "\"model\":[]", "\"model\":{}", "\"model\":true",
        "\"temperature\":\"1\"", "\"temperature\":-1", "\"temperature\":2.5", "\"temperature\":1e30",
        "\"temperature\":true", "\"temperature\":[]", "\"temperature\":{}", "\"temperature\":-0.0001",
        "\"temperature\":1e400", "\"top_p\":-0.1", "\"top_p\":1.1", "\"top_p\":\"x\"", "\"top_p\":[0.5]",
        "\"n\":0", "\"n\":-1", "\"n\":129", "\"n\":1.5", "\"n\":\"2\"", "\"n\":1e20",
        "\"n\":18446744073709551616", "\"n\":-9223372036854775809", "\"n\":true", "\"n\":null,\"n\":0",
        "\"max_tokens\":0", "\"max_tokens\":-5", "\"max_tokens\":1.5", "\"max_tokens\":\"10\"",
        "\"max_tokens\":1e12", "\"max_tokens\":2147483648", "\"max_tokens\":true",
        "\"max_tokens\":99999999999999999999999", "\"max_completion_tokens\":0",
        "\"max_completion_tokens\":-1", "\"max_completion_tokens\":\"5\"",
        "\"stop\":1", "\"stop\":[1]", "\"stop\":[\"\"]", "\"stop\":\"\"", "\"stop\":{\"a\":1}",
        "\"stop\":[null]", "\"stop\":[[\"a\"]]", "\"stop\":true",
        "\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]",
        "\"seed\":\"1\"", "\"seed\":1.5", "\"seed\":true", "\"seed\":[]", "\"seed\":{}",
        "\"presence_penalty\":-3", "\"presence_penalty\":3", "\"presence_penalty\":\"0\"",
        "\"frequency_penalty\":-2.01", "\"frequency_penalty\":2.01", "\"frequency_penalty\":[]",
        "\"logit_bias\":[]", "\"logit_bias\":\"x\"", "\"logit_bias\":1", "\"logit_bias\":{\"abc\":1}",
        "\"logit_bias\":{\"1\":200}", "\"logit_bias\":{\"1\":-101}", "\"logit_bias\":{\"1\":\"5\"}",
        "\"logit_bias\":{\"-1\":1}", "\"logit_bias\":{\"99999999999\":1}", "\"logit_bias\":{\"1.5\":1}",
        "\"logit_bias\":{\"\":1}", "\"logit_bias\":{\"1\":null}", "\"logit_bias\":{\"1\":[]}",
        "\"logit_bias\":{\" 1\":1}", "\"logit_bias\":{\"1\":1e999}",
        "\"logprobs\":\"yes\"", "\"logprobs\":1", "\"logprobs\":[]",
        "\"logprobs\":true,\"top_logprobs\":21", "\"logprobs\":true,\"top_logprobs\":-1",
        "\"top_logprobs\":5", "\"logprobs\":true,\"top_logprobs\":\"3\"",
        "\"logprobs\":true,\"top_logprobs\":2.5", "\"user\":1", "\"user\":[]",
        "\"stream\":\"true\"", "\"stream\":1", "\"stream\":{}", "\"stream_options\":\"x\"",
        "\"stream_options\":[]", "\"stream_options\":{\"include_usage\":\"yes\"}",
        "\"top_k\":\"5\"", "\"top_k\":1.5", "\"top_k\":-2", "\"top_k\":1e10", "\"min_p\":2",
        "\"min_p\":-1", "\"min_p\":\"0.1\"", "\"repeat_penalty\":0", "\"repeat_penalty\":-1",
        "\"repeat_penalty\":11", "\"repeat_penalty\":\"x\"", "\"typical_p\":1.5", "\"typical_p\":-1",
        "\"ignore_eos\":\"no\"", "\"tools\":\"x\"", "\"tools\":{}", "\"tools\":[1]", "\"tools\":[{}]",
        "\"tools\":[{\"type\":\"function\"}]", "\"tools\":[{\"type\":\"function\",\"function\":{}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":5}}]",
        "\"tools\":[{\"type\":\"code\",\"function\":{\"name\":\"a\"}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":\"x\"}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"description\":1}}]",
        "\"tool_choice\":\"maybe\"", "\"tool_choice\":1", "\"tool_choice\":[]",
        "\"tool_choice\":{\"function\":{}}", "\"tool_choice\":{\"type\":\"function\"}",
        "\"tool_choice\":\"required\"",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"zzz\"}}",
        "\"response_format\":\"json\"", "\"response_format\":{\"type\":\"xml\"}",
        "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":[]}}", "\"grammar\":[\"root\"]",
        "\"grammar\":\"root ::= \\\"a\\\"\",\"response_format\":{\"type\":\"json_object\"}", "\"reasoning_effort\":\"extreme\"",
        "\"parallel_tool_calls\":\"yes\"", "\"reasoning_format\":7",
        "\"response_format\":{}", "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{}}",
        "\"chat_template_kwargs\":\"x\"", "\"chat_template_kwargs\":[]",
    };
    for (const char* f : badFields) chatWith(f);
    // Completions.
    auto comp = [&](const std::string& fields) { out.push_back({false, "{" + fields + "}"}); };
    const char* badPrompts[] = {
        "", "\"prompt\":null", "\"prompt\":1", "\"prompt\":{}", "\"prompt\":[]", "\"prompt\":true",
        "\"prompt\":[[1],[2]]", "\"prompt\":[\"a\",\"b\"]", "\"prompt\":[-1]", "\"prompt\":[1.5]",
        "\"prompt\":[1,\"a\"]", "\"prompt\":[true]", "\"prompt\":[null]", "\"prompt\":[[]]",
        "\"prompt\":[[-3]]", "\"prompt\":[{}]", "\"prompt\":[4294967296]",
        "\"prompt\":\"x\",\"suffix\":\"y\"", "\"prompt\":\"x\",\"best_of\":3",
        "\"prompt\":\"x\",\"echo\":\"yes\"", "\"prompt\":\"x\",\"logprobs\":21",
        "\"prompt\":\"x\",\"logprobs\":-1", "\"prompt\":\"x\",\"logprobs\":\"x\"",
        "\"prompt\":\"x\",\"max_tokens\":0", "\"prompt\":\"x\",\"n\":0", "\"prompt\":\"x\",\"stop\":[\"\"]",
        "\"prompt\":\"x\",\"temperature\":-1", "\"prompt\":\"x\",\"logit_bias\":{\"a\":1}",
        "\"prompt\":\"x\",\"stream\":\"yes\"", "\"prompt\":\"x\",\"seed\":\"s\"",
        "\"prompt\":\"x\",\"model\":5", "\"prompt\":\"x\",\"top_p\":2",
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]",
    };
    for (const char* p : badPrompts) comp(p);
    return out;
}

} // namespace hearth::test
