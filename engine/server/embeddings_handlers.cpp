// The embedding endpoints: OpenAI's POST /v1/embeddings (and /embeddings), Ollama's /api/embed
// and legacy /api/embeddings. Each request's inputs go to the engine as one embedding request
// (batched there with whatever else runs) and the handler waits for its vectors.
#include "server/server_impl.h"

#include "server/embeddings_api.h"
#include "server/ollama_api.h"

#include <chrono>

namespace hearth::server {

namespace {

// The engine's error as the client should see it: a model without embeddings is the client's.
ApiError embedError(const Status& st) {
    if (st.code() == ErrorCode::Unsupported) {
        ApiError e = invalidRequest(st.message(), "model", "model_not_supported");
        return e;
    }
    return apiErrorFromStatus(st, "input");
}

} // namespace

void Server::Impl::handleEmbeddings(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseOpenAIEmbeddings(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    auto ref = engineFor(parsed->model);
    if (!ref) return sendError(res, ref.error());
    auto ids = embeddingTokens(*parsed, *ref->engine);
    if (!ids) return sendError(res, ids.error());
    EmbeddingRequest r;
    r.inputs = std::move(*ids);
    r.dimensions = parsed->dimensions;
    auto result = embedAndWait(*ref->engine, std::move(r));
    if (!result) return sendError(res, embedError(result.status()));
    sendJson(res, 200, openAIEmbeddingsJson(*result, ref->modelId, parsed->base64));
}

void Server::Impl::handleOllamaEmbed(const httplib::Request& req, httplib::Response& res) {
    const auto start = std::chrono::steady_clock::now();
    const bool legacy = req.path == "/api/embeddings";
    auto fail = [&](const ApiError& e) {
        if (e.status == 429)
            res.set_header("Retry-After", std::to_string(m_config.retryAfterSeconds > 0 ? m_config.retryAfterSeconds : 1));
        sendJson(res, e.status, ollamaErrorJson(e.message));
    };
    auto parsed = parseOllamaEmbed(req.body, m_limits, legacy);
    if (!parsed) return fail(parsed.error());
    auto ref = engineFor(untaggedModel(parsed->model));
    if (!ref) return fail(ref.error());
    auto ids = embeddingTokens(*parsed, *ref->engine);
    if (!ids) return fail(ids.error());
    EmbeddingResult result;
    if (!ids->empty()) {
        EmbeddingRequest r;
        r.inputs = std::move(*ids);
        r.dimensions = parsed->dimensions;
        r.normalize = !legacy; // the legacy endpoint answers the raw pooled vector, as Ollama's does
        auto done = embedAndWait(*ref->engine, std::move(r));
        if (!done) return fail(embedError(done.status()));
        result = std::move(*done);
    }
    if (legacy) {
        OJson out = OJson::object();
        out["embedding"] = result.vectors.empty() ? std::vector<float>{} : result.vectors.front();
        return sendJson(res, 200, out);
    }
    OJson out = OJson::object();
    out["model"] = parsed->model;
    out["embeddings"] = result.vectors;
    out["total_duration"] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    out["load_duration"] = 0;
    out["prompt_eval_count"] = result.promptTokens;
    sendJson(res, 200, out);
}

} // namespace hearth::server
