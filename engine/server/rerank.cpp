// Reranking: POST /v1/rerank (also /rerank, /v1/reranking, /reranking) in Jina's and llama-server's
// shape ({query, documents, top_n} -> results sorted by relevance_score) and TEI's ({query,
// texts} -> [{index, score}]), scored by a reranker model (rank pooling) in one engine request.
#include "server/server_impl.h"

#include "server/json_fields.h"

#include <algorithm>
#include <numeric>

namespace hearth::server {

namespace {

// `text` with every `from` replaced by `to` (the replacements are not searched again).
std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}


constexpr size_t kMaxRerankDocuments = 1000;

struct RerankBody {
    std::string model;
    std::string query;
    std::vector<std::string> documents;
    bool tei = false;      // "texts" given: TEI's request and answer
    int64_t topN = -1;     // < 0: all
    bool returnText = false; // return_documents (Jina, Cohere) or return_text (TEI)
};

ApiResult<RerankBody> parseRerank(std::string_view text, const ParseLimits& limits) {
    auto json = parseJsonObject(text, limits);
    if (!json) return json.error();
    const OJson& body = *json;
    RerankBody r;
    if (auto e = readString(body, "model", r.model)) return *e;
    const OJson* query = field(body, "query");
    if (!query) return invalidRequest("'query' is required", "query", "missing_required_parameter");
    if (!query->is_string()) return invalidRequest("'query' must be a string", "query");
    r.query = query->get<std::string>();
    if (r.query.empty()) return invalidRequest("'query' must not be empty", "query");
    r.tei = field(body, "texts") != nullptr;
    const char* key = r.tei ? "texts" : "documents";
    const OJson* docs = field(body, key);
    if (!docs) return invalidRequest(std::string("'") + key + "' is required", key, "missing_required_parameter");
    if (!docs->is_array() || docs->empty())
        return invalidRequest(std::string("'") + key + "' must be a non-empty array of strings", key);
    if (docs->size() > kMaxRerankDocuments)
        return invalidRequest(std::string("'") + key + "' has " + std::to_string(docs->size()) + " documents; at most " +
                                  std::to_string(kMaxRerankDocuments) + " are scored per request",
                              key);
    for (size_t i = 0; i < docs->size(); ++i) {
        const OJson& d = (*docs)[i];
        const std::string param = std::string(key) + "[" + std::to_string(i) + "]";
        if (d.is_string()) r.documents.push_back(d.get<std::string>());
        else if (d.is_object() && d.contains("text") && d["text"].is_string()) r.documents.push_back(d["text"].get<std::string>());
        else return invalidRequest("'" + param + "' must be a string (or an object with a string 'text')", param);
    }
    int64_t topN = -1;
    if (auto e = readInt(body, "top_n", 1, 1 << 30, topN)) return *e;
    r.topN = topN;
    if (auto e = readBool(body, r.tei ? "return_text" : "return_documents", r.returnText)) return *e;
    return r;
}

} // namespace

void Server::Impl::handleRerank(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseRerank(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    auto ref = engineFor(parsed->model);
    if (!ref) return sendError(res, ref.error());
    Engine& engine = *ref->engine;
    if (engine.model().rankOutputs <= 0)
        return sendError(res, invalidRequest("the model '" + ref->modelId +
                                                 "' is not a reranker (a model with a classification head and rank pooling)",
                                             "model", "model_not_supported"));
    const tokenizer::Tokenizer& tok = engine.tokenizer();
    auto encode = [&](const std::string& text, const std::string& param) -> ApiResult<std::vector<int32_t>> {
        auto ids = tok.encode(text, false, false);
        if (!ids) return invalidRequest("'" + param + "': " + ids.status().message(), param);
        return std::move(*ids);
    };
    auto query = encode(parsed->query, "query");
    if (!query) return sendError(res, query.error());
    const std::string& rankTemplate = engine.model().rankTemplate;
    EmbeddingRequest r;
    const char* key = parsed->tei ? "texts" : "documents";
    for (size_t i = 0; i < parsed->documents.size(); ++i) {
        const std::string param = std::string(key) + "[" + std::to_string(i) + "]";
        if (!rankTemplate.empty()) { // the file's prompt for a pair (Qwen3-Reranker), as llama-server fills it
            std::string prompt = replaceAll(replaceAll(rankTemplate, "{query}", parsed->query), "{document}",
                                            parsed->documents[i]);
            auto ids = tok.encode(prompt, false, true);
            if (!ids) return sendError(res, invalidRequest("'" + param + "': " + ids.status().message(), param));
            r.inputs.push_back(std::move(*ids));
        } else {
            auto doc = encode(parsed->documents[i], param);
            if (!doc) return sendError(res, doc.error());
            r.inputs.push_back(rankingInput(tok, *query, *doc));
        }
        if (int64_t(r.inputs.back().size()) > engine.model().contextLength)
            return sendError(res, invalidRequest("'" + param + "' with the query is " +
                                                     std::to_string(r.inputs.back().size()) +
                                                     " tokens, more than the model's context of " +
                                                     std::to_string(engine.model().contextLength),
                                                 param, "context_length_exceeded"));
    }
    auto result = embedAndWait(engine, std::move(r));
    if (!result) return sendError(res, apiErrorFromStatus(result.status(), key));

    std::vector<size_t> order(parsed->documents.size());
    std::iota(order.begin(), order.end(), size_t(0));
    auto score = [&](size_t i) { return result->vectors[i].empty() ? 0.0f : result->vectors[i][0]; };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score(a) > score(b); });
    if (parsed->topN >= 0 && size_t(parsed->topN) < order.size()) order.resize(size_t(parsed->topN));
    OJson results = OJson::array();
    for (size_t i : order) {
        OJson e = {{"index", i}, {parsed->tei ? "score" : "relevance_score", score(i)}};
        if (parsed->returnText) {
            if (parsed->tei) e["text"] = parsed->documents[i];
            else e["document"] = {{"text", parsed->documents[i]}};
        }
        results.push_back(std::move(e));
    }
    if (parsed->tei) return sendJson(res, 200, results);
    OJson out = OJson::object();
    out["model"] = ref->modelId;
    out["object"] = "list";
    out["usage"] = {{"prompt_tokens", result->promptTokens}, {"total_tokens", result->promptTokens}};
    out["results"] = std::move(results);
    sendJson(res, 200, out);
}

} // namespace hearth::server
