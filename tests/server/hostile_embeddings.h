// A corpus of malformed and hostile bodies for the embedding endpoints (/v1/embeddings,
// /api/embed, /api/embeddings): bad JSON, wrong input shapes and types, empty inputs, ids outside
// the vocabulary, too many inputs, too many tokens, bad encoding_format and dimensions. Every one
// must be refused with a 4xx error in the endpoint's shape, never crash the server, and never
// reach the engine.
#pragma once

#include <string>
#include <vector>

namespace hearth::test {

struct HostileEmbeddingBody {
    std::string path;
    std::string body;
};

// `vocab` and `context` are the served model's (ids and lengths just past them are refused).
inline std::vector<HostileEmbeddingBody> hostileEmbeddingBodies(int vocab, int context) {
    std::vector<HostileEmbeddingBody> out;
    const std::string oa = "/v1/embeddings", ol = "/api/embed", legacy = "/api/embeddings";
    auto all = [&](const std::string& b) {
        for (const std::string* p : {&oa, &ol, &legacy}) out.push_back({*p, b});
    };
    const char* broken[] = {
        "", " ", "{", "[", "null", "0", "\"text\"", "[]", "{\"input\":", "{'input':'x'}", "{\"a\":1,}",
        "{\"a\":1}x", "{}{}", "{\"x\":NaN}", "{\"n\":01}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\xff\xfe\"}",
        "{\"a\":\"\xc0\xaf\"}", "{a:1}",
    };
    for (const char* b : broken) all(b);
    all(std::string(100000, '['));
    all("{\"input\":" + std::string(200, '[') + std::string(200, ']') + "}");
    all("{\"model\":\"m\",\"input\":\"" + std::string(10u << 20, 'x') + "\"}"); // over the body limit

    // OpenAI: input's shape and types.
    const std::string m = "{\"model\":\"m\",";
    const std::string badOpenAI[] = {
        "{\"model\":\"m\"}", m + "\"input\":null}", m + "\"input\":\"\"}", m + "\"input\":[]}",
        m + "\"input\":[[]]}", m + "\"input\":[\"a\",\"\"]}", m + "\"input\":[\"a\",1]}", m + "\"input\":[1,\"a\"]}",
        m + "\"input\":[[1],\"a\"]}", m + "\"input\":[[1],[]]}", m + "\"input\":[[1],[\"a\"]]}", m + "\"input\":5}",
        m + "\"input\":{}}", m + "\"input\":true}", m + "\"input\":[-1]}", m + "\"input\":[1.5]}",
        m + "\"input\":[1e99]}", m + "\"input\":[[-5]]}", m + "\"input\":[" + std::to_string(vocab) + "]}",
        m + "\"input\":[[1],[" + std::to_string(vocab + 7) + "]]}", m + "\"input\":[2147483648]}",
        m + "\"input\":[null]}", m + "\"input\":[[null]]}", m + "\"input\":[{}]}", m + "\"input\":[[[1]]]}",
        m + "\"input\":\"a\",\"encoding_format\":\"hex\"}", m + "\"input\":\"a\",\"encoding_format\":5}",
        m + "\"input\":\"a\",\"dimensions\":0}", m + "\"input\":\"a\",\"dimensions\":-3}",
        m + "\"input\":\"a\",\"dimensions\":1.5}", m + "\"input\":\"a\",\"dimensions\":\"8\"}",
        m + "\"input\":\"a\",\"dimensions\":100000}", m + "\"input\":\"a\",\"user\":5}", "{\"model\":5,\"input\":\"a\"}",
    };
    for (const std::string& b : badOpenAI) out.push_back({oa, b});
    std::string many = m + "\"input\":[";
    for (int i = 0; i < 2049; ++i) many += std::string(i ? "," : "") + "\"a\"";
    out.push_back({oa, many + "]}"});
    std::string longIds = m + "\"input\":[";
    for (int i = 0; i <= context; ++i) longIds += std::string(i ? "," : "") + "5";
    out.push_back({oa, longIds + "]}"});
    std::string longText;
    for (int i = 0; i <= context; ++i) longText += " the";
    out.push_back({oa, m + "\"input\":\"" + longText + "\"}"});
    // Many inputs, each within the context, together beyond the per-request token limit.
    std::string heavy = m + "\"input\":[";
    for (int i = 0; i < 2000; ++i) heavy += std::string(i ? "," : "") + "\"" + longText.substr(0, 700) + "\"";
    out.push_back({oa, heavy + "]}"});

    // Ollama /api/embed and the legacy /api/embeddings.
    const std::string badOllama[] = {
        "{}", "{\"model\":\"\",\"input\":\"a\"}", "{\"model\":5,\"input\":\"a\"}", "{\"model\":\"m\",\"input\":5}",
        "{\"model\":\"m\",\"input\":\"\"}", "{\"model\":\"m\",\"input\":[\"a\",\"\"]}",
        "{\"model\":\"m\",\"input\":[1,2]}", "{\"model\":\"m\",\"input\":[[1]]}", "{\"model\":\"m\",\"input\":{}}",
        "{\"model\":\"m\",\"input\":\"a\",\"truncate\":\"no\"}", "{\"model\":\"m\",\"input\":\"a\",\"dimensions\":0}",
        "{\"model\":\"m\",\"input\":\"a\",\"dimensions\":100000}", "{\"model\":\"m\",\"input\":\"a\",\"options\":5}",
        "{\"model\":\"m\",\"input\":\"" + longText + "\",\"truncate\":false}",
    };
    for (const std::string& b : badOllama) out.push_back({ol, b});
    const std::string badLegacy[] = {
        "{}", "{\"model\":\"\",\"prompt\":\"a\"}", "{\"model\":\"m\",\"prompt\":5}",
        "{\"model\":\"m\",\"prompt\":[\"a\"]}", "{\"model\":\"m\",\"prompt\":\"a\",\"options\":[]}",
    };
    for (const std::string& b : badLegacy) out.push_back({legacy, b});
    return out;
}

} // namespace hearth::test
