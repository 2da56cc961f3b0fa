// A corpus of malformed and hostile request bodies for the Ollama endpoints (/api/chat,
// /api/generate, /api/show): bad JSON, wrong types, out-of-range options, invalid UTF-8, deep
// nesting, huge bodies, images, templates. Every one must be refused with a 4xx {"error": "..."}
// and never crash the server or reach the engine.
#pragma once

#include <string>
#include <vector>

namespace hearth::test {

struct HostileOllamaBody {
    std::string path; // "/api/chat", "/api/generate" or "/api/show"
    std::string body;
};

inline std::vector<HostileOllamaBody> hostileOllamaBodies() {
    std::vector<HostileOllamaBody> out;
    auto all = [&](const std::string& b) {
        out.push_back({"/api/chat", b});
        out.push_back({"/api/generate", b});
        out.push_back({"/api/show", b});
    };
    // Not JSON, or not an object.
    const char* broken[] = {
        "", " ", "{", "}", "[", "]", "null", "true", "0", "1e999", "\"text\"", "[]", "[{}]",
        "{\"model\":", "{'model':'m'}", "{\"a\":1,}", "{\"a\":1}x", "{}{}", "{\"x\":NaN}",
        "{\"x\":Infinity}", "{\"n\":01}", "{\"n\":.5}", "{\"n\":0x10}", "{\"a\":\"\x01\"}",
        "{\"a\":\"\\u12\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\xff\xfe\"}", "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}",
        "\xef\xbb\xbf{\"stream\":5}", "{a:1}", "{\"a\" 1}", "{\"a\":[1,2}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]",
        "{\"model\":\"m\",\"prompt\":\"hi\"",
    };
    for (const char* b : broken) all(b);
    all(std::string("{\"a\":\"\0\"}", 9));
    all(std::string(100000, '['));
    all(std::string(5000, '{'));
    all("{\"options\":" + std::string(200, '[') + std::string(200, ']') + "}");
    all("{\"format\":" + std::string(100, '{') + "}");
    all("{\"prompt\":\"" + std::string(10u << 20, 'x') + "\"}");

    // /api/show: the model is required and must be a string.
    const char* badShow[] = {
        "{}", "{\"model\":\"\"}", "{\"model\":5}", "{\"model\":[]}", "{\"name\":{}}",
        "{\"model\":\"m\",\"verbose\":\"yes\"}", "{\"model\":null}",
    };
    for (const char* b : badShow) out.push_back({"/api/show", b});

    // Shared fields, on both generation endpoints (on top of valid requests).
    const std::string chatBase = "\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    const std::string genBase = "\"model\":\"m\",\"prompt\":\"hi\"";
    auto both = [&](const std::string& field) {
        out.push_back({"/api/chat", "{" + chatBase + "," + field + "}"});
        out.push_back({"/api/generate", "{" + genBase + "," + field + "}"});
    };
    const char* badShared[] = {
        "\"model\":5", "\"model\":[\"m\"]", "\"model\":{}", "\"stream\":\"yes\"", "\"stream\":1",
        "\"options\":5", "\"options\":\"temperature=0\"", "\"options\":[]",
        "\"options\":{\"temperature\":\"hot\"}", "\"options\":{\"temperature\":-1}",
        "\"options\":{\"temperature\":1e9}", "\"options\":{\"temperature\":true}",
        "\"options\":{\"top_k\":1.5}", "\"options\":{\"top_k\":\"40\"}",
        "\"options\":{\"top_k\":99999999999}", "\"options\":{\"top_p\":1.5}",
        "\"options\":{\"top_p\":-0.1}", "\"options\":{\"min_p\":2}", "\"options\":{\"typical_p\":-1}",
        "\"options\":{\"repeat_penalty\":-1}", "\"options\":{\"repeat_penalty\":11}",
        "\"options\":{\"presence_penalty\":3}", "\"options\":{\"frequency_penalty\":-3}",
        "\"options\":{\"repeat_last_n\":-2}", "\"options\":{\"repeat_last_n\":\"all\"}",
        "\"options\":{\"seed\":\"1\"}", "\"options\":{\"seed\":1.5}", "\"options\":{\"seed\":[1]}",
        "\"options\":{\"num_predict\":-3}", "\"options\":{\"num_predict\":1e12}",
        "\"options\":{\"num_predict\":\"10\"}", "\"options\":{\"num_predict\":2.5}",
        "\"options\":{\"stop\":5}", "\"options\":{\"stop\":[5]}", "\"options\":{\"stop\":[\"\"]}",
        "\"options\":{\"stop\":{}}", "\"options\":{\"num_ctx\":\"big\"}",
        "\"options\":{\"num_thread\":[]}", "\"options\":{\"use_mmap\":\"no\"}",
        "\"options\":{\"mirostat\":\"2\"}", "\"format\":\"xml\"", "\"format\":5",
        "\"format\":[\"json\"]", "\"format\":true", "\"format\":\"JSON \"", "\"think\":\"yes\"",
        "\"think\":1", "\"think\":{}", "\"keep_alive\":\"forever\"", "\"keep_alive\":\"5 m\"",
        "\"keep_alive\":\"m5\"", "\"keep_alive\":\"5d\"", "\"keep_alive\":\"\"",
        "\"keep_alive\":[]", "\"keep_alive\":true", "\"keep_alive\":\"1.2.3s\"",
        // Schemas the grammar compiler refuses.
        "\"format\":{\"type\":\"object\",\"properties\":{\"a\":{\"$dynamicRef\":\"meta\"}}}",
        "\"format\":{\"type\":\"strange\"}", "\"format\":{\"$ref\":\"#/$defs/nowhere\"}",
        "\"format\":{\"type\":\"string\",\"pattern\":\"(\"}",
        "\"format\":{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
    };
    for (const char* f : badShared) both(f);
    {
        std::string stops = "\"options\":{\"stop\":[";
        for (int i = 0; i < 64; ++i) stops += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
        both(stops + "]}");
        both("\"options\":{\"stop\":[\"" + std::string(5000, 's') + "\"]}");
    }

    // /api/chat messages and tools.
    auto chat = [&](const std::string& fields) { out.push_back({"/api/chat", "{" + fields + "}"}); };
    const char* badMessages[] = {
        "\"messages\":\"hi\"", "\"messages\":1", "\"messages\":{}", "\"messages\":[1]",
        "\"messages\":[null]", "\"messages\":[[]]", "\"messages\":[{}]",
        "\"messages\":[{\"role\":1,\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"developer\",\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"\",\"content\":\"x\"}]", "\"messages\":[{\"content\":\"x\"}]",
        "\"messages\":[{\"role\":\"user\",\"content\":1}]",
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":{}}]",
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"images\":[\"aGk=\"]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"images\":\"aGk=\"}]",
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":\"x\"}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[1]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":1}}]}]",
        "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":5}}]}]",
        "\"messages\":[{\"role\":\"tool\",\"content\":\"x\",\"tool_name\":5}]",
        "\"messages\":[{\"role\":\"assistant\",\"content\":\"x\",\"thinking\":[]}]",
        "\"messages\":[{\"role\":\"user\",\"content\":\"RAISE\"}]",
    };
    for (const char* m : badMessages) chat(m);
    {
        std::string many = "\"messages\":[";
        for (int i = 0; i < 1100; ++i) many += std::string(i ? "," : "") + "{\"role\":\"user\",\"content\":\"x\"}";
        chat(many + "]");
    }
    const char* badTools[] = {
        "\"tools\":5", "\"tools\":{}", "\"tools\":[1]", "\"tools\":[{}]",
        "\"tools\":[{\"type\":\"retrieval\",\"function\":{\"name\":\"f\"}}]",
        "\"tools\":[{\"type\":\"function\"}]", "\"tools\":[{\"type\":\"function\",\"function\":{}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[]}}]",
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":5}}]",
    };
    for (const char* t : badTools) chat(chatBase + "," + t);

    // /api/generate fields.
    auto gen = [&](const std::string& fields) { out.push_back({"/api/generate", "{" + fields + "}"}); };
    const char* badGenerate[] = {
        "\"prompt\":5", "\"prompt\":[1,2]", "\"prompt\":{}", "\"prompt\":\"hi\",\"system\":5",
        "\"prompt\":\"hi\",\"raw\":\"true\"", "\"prompt\":\"hi\",\"raw\":true,\"system\":\"s\"",
        "\"prompt\":\"hi\",\"template\":\"{{ .Prompt }}\"", "\"prompt\":\"hi\",\"template\":5",
        "\"prompt\":\"hi\",\"suffix\":\"end\"", "\"prompt\":\"hi\",\"images\":[\"aGk=\"]",
        "\"prompt\":\"hi\",\"images\":5", "\"prompt\":\"hi\",\"context\":5",
        "\"prompt\":\"hi\",\"context\":[-1]", "\"prompt\":\"hi\",\"context\":[\"a\"]",
        "\"prompt\":\"hi\",\"context\":[1.5]", "\"prompt\":\"hi\",\"context\":[99999999]",
        "\"prompt\":\"hi\",\"context\":[4294967296]",
    };
    for (const char* g : badGenerate) gen(g);
    // A context that fills the model's context leaves no room.
    {
        std::string ctx = "\"prompt\":\"hi\",\"context\":[";
        for (int i = 0; i < 600; ++i) ctx += std::string(i ? "," : "") + "5";
        gen(ctx + "]");
    }
    return out;
}

} // namespace hearth::test
