// Builders for Ollama response bodies: generate/chat chunks and final objects with their
// nanosecond timings, tool calls with object arguments, and the model listings (tags, show, ps).
#include "server/ollama_api.h"

#include "server/api_error.h"
#include "server/tool_calls.h"

#include <cstdio>
#include <ctime>

namespace hearth::server {

namespace {

int64_t msToNs(double ms) { return ms > 0.0 ? int64_t(ms * 1e6) : 0; }

// A stable stand-in for Ollama's blob digest: 64 hex digits derived from the model id (not a
// hash of the file's contents; nothing here reads the file).
std::string idDigest(const std::string& id) {
    std::string out;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int round = 0; round < 4; ++round) {
        for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ull;
        h = (h ^ uint64_t(round + 1)) * 0x100000001b3ull;
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
        out += buf;
    }
    return out;
}

std::string lowercase(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return s;
}

} // namespace

OJson ollamaErrorJson(const std::string& message) {
    OJson j = OJson::object();
    j["error"] = message;
    return j;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    const std::time_t secs = std::time_t(ns / 1000000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(ns % 1000000000));
    return buf;
}

OllamaTimings ollamaTimings(const Usage& usage, std::chrono::steady_clock::duration total,
                            std::chrono::steady_clock::duration load) {
    OllamaTimings t;
    t.totalNs = std::chrono::duration_cast<std::chrono::nanoseconds>(total).count();
    t.loadNs = std::chrono::duration_cast<std::chrono::nanoseconds>(load).count();
    t.promptEvalCount = usage.promptTokens;
    // Prefill: from the first scheduling to the first token.
    t.promptEvalNs = msToNs(usage.timeToFirstTokenMs - usage.queueMs);
    t.evalCount = usage.completionTokens;
    t.evalNs = msToNs(usage.generationMs);
    if (t.totalNs < 1) t.totalNs = 1;
    return t;
}

void addTimings(OJson& out, const OllamaTimings& t) {
    out["total_duration"] = t.totalNs;
    out["load_duration"] = t.loadNs;
    out["prompt_eval_count"] = t.promptEvalCount;
    out["prompt_eval_duration"] = t.promptEvalNs;
    out["eval_count"] = t.evalCount;
    out["eval_duration"] = t.evalNs;
}

const char* ollamaDoneReason(FinishReason reason) {
    return reason == FinishReason::Length ? "length" : "stop";
}

OJson ollamaToolCalls(const std::vector<ToolCall>& calls) {
    OJson a = OJson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        OJson args = OJson::parse(calls[i].arguments, nullptr, false);
        if (args.is_discarded()) args = OJson::parse(closedJsonObject(calls[i].arguments), nullptr, false); // cut short
        if (args.is_discarded() || !args.is_object()) args = OJson::object();
        OJson fn = OJson::object();
        fn["index"] = i;
        fn["name"] = calls[i].name;
        fn["arguments"] = std::move(args);
        OJson c = OJson::object();
        c["id"] = calls[i].id;
        c["function"] = std::move(fn);
        a.push_back(std::move(c));
    }
    return a;
}

std::string ndjsonLine(const OJson& json) { return dumpJson(json) + "\n"; }

OJson generateChunk(const std::string& model, const std::string& text, bool done,
                    const std::string& thinking) {
    OJson j = OJson::object();
    j["model"] = model;
    j["created_at"] = rfc3339(std::chrono::system_clock::now());
    j["response"] = text;
    if (!thinking.empty()) j["thinking"] = thinking;
    j["done"] = done;
    return j;
}

OJson chatChunk(const std::string& model, const std::string& content, const OJson& toolCalls,
                bool done, const std::string& thinking) {
    OJson msg = OJson::object();
    msg["role"] = "assistant";
    msg["content"] = content;
    if (!thinking.empty()) msg["thinking"] = thinking;
    if (!toolCalls.is_null()) msg["tool_calls"] = toolCalls;
    OJson j = OJson::object();
    j["model"] = model;
    j["created_at"] = rfc3339(std::chrono::system_clock::now());
    j["message"] = std::move(msg);
    j["done"] = done;
    return j;
}

OJson ollamaDetails(const OllamaModelInfo& m) {
    OJson d = OJson::object();
    d["parent_model"] = "";
    d["format"] = "gguf";
    const std::string family = m.summary ? lowercase(m.summary->architecture) : "";
    d["family"] = family;
    d["families"] = family.empty() ? OJson(nullptr) : OJson::array({family});
    d["parameter_size"] = "";
    d["quantization_level"] = "";
    return d;
}

OJson ollamaTagEntry(const OllamaModelInfo& m) {
    OJson e = OJson::object();
    e["name"] = m.id;
    e["model"] = m.id;
    e["modified_at"] = rfc3339(std::chrono::system_clock::now());
    e["size"] = m.fileBytes;
    e["digest"] = idDigest(m.id);
    e["details"] = ollamaDetails(m);
    return e;
}

OJson ollamaShowJson(const OllamaModelInfo& m, bool verbose) {
    OJson j = OJson::object();
    j["license"] = "";
    j["modelfile"] = "# hearth-server serves this GGUF as is\nFROM " + m.id + "\n";
    j["parameters"] = "";
    j["template"] = "";
    j["details"] = ollamaDetails(m);
    OJson info = OJson::object();
    if (const ModelSummary* s = m.summary) {
        const std::string arch = lowercase(s->architecture);
        info["general.architecture"] = arch;
        if (!s->name.empty()) info["general.name"] = s->name;
        info[arch + ".context_length"] = s->contextLength;
        info[arch + ".embedding_length"] = s->nEmbd;
        info[arch + ".block_count"] = s->nLayer;
        info[arch + ".vocab_size"] = s->nVocab;
        if (verbose) {
            info["tokenizer.ggml.bos_token_id"] = s->bosToken;
            info["hearth.kv_type"] = s->kvType;
            info["hearth.device"] = s->device;
        }
    }
    j["model_info"] = std::move(info);
    // Tool calls are parsed from the model's text in the formats common templates teach; an
    // encoder (bert) only embeds, as Ollama lists its embedding models.
    if (m.summary && m.summary->embeddingsOnly) j["capabilities"] = OJson::array({"embedding"});
    else j["capabilities"] = OJson::array({"completion", "tools"});
    if (m.summary && m.summary->vision) j["capabilities"].push_back("vision");
    j["modified_at"] = rfc3339(std::chrono::system_clock::now());
    return j;
}

OJson ollamaPsEntry(const OllamaModelInfo& m, const ModelEntry& loaded) {
    OJson e = OJson::object();
    e["name"] = m.id;
    e["model"] = m.id;
    const uint64_t cache = m.summary ? m.summary->kvBytes + m.summary->stateBytes : 0;
    e["size"] = loaded.memoryBytes ? loaded.memoryBytes : cache;
    e["digest"] = idDigest(m.id);
    e["details"] = ollamaDetails(m);
    // In use, or kept until room is needed: no time set (Ollama shows a far date for "forever").
    e["expires_at"] = loaded.expiresAt ? rfc3339(*loaded.expiresAt) : std::string("9999-12-31T23:59:59Z");
    e["size_vram"] = 0;
    e["context_length"] = m.summary ? m.summary->contextLength : 0;
    return e;
}

} // namespace hearth::server
