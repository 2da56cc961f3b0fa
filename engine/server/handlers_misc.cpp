// The small endpoints: /health, /metrics, /v1/models, /tokenize and /detokenize.
#include "server/server_impl.h"

#include "server/openai_response.h"
#include "server/upstream.h"

namespace hearth::server {

void Server::Impl::handleHealth(const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<ModelProvider> provider;
    std::string loadError;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        provider = m_provider;
        loadError = m_loadError;
    }
    if (!loadError.empty()) {
        sendJson(res, 503, {{"status", "error"}, {"error", loadError}});
        return;
    }
    if (!provider && m_gateway) { // a gateway without local models
        if (m_gateway->ready()) sendJson(res, 200, {{"status", "ok"}});
        else sendJson(res, 503, {{"status", "waiting for the upstreams' model lists"}});
        return;
    }
    if (!provider || !provider->ready()) {
        sendJson(res, 503, {{"status", "loading model"}});
        return;
    }
    sendJson(res, 200, {{"status", "ok"}});
}

void Server::Impl::handleMetrics(const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<ModelProvider> provider = currentProvider();
    bool loaded = provider && provider->ready();
    EngineStats stats;
    bool haveStats = false;
    if (loaded) {
        if (std::shared_ptr<Engine> engine = provider->loaded()) {
            stats = engine->stats();
            haveStats = true;
        }
    }
    res.status = 200;
    res.set_content(m_metrics.render(haveStats ? &stats : nullptr, loaded),
                    "text/plain; version=0.0.4; charset=utf-8");
}

void Server::Impl::handleModels(const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<ModelProvider> provider = currentProvider();
    std::vector<ModelEntry> models;
    if (provider) models = provider->list();
    std::vector<UpstreamModel> remote;
    if (m_gateway) remote = m_gateway->models();
    auto entry = [](const ModelEntry& m) {
        OJson e = OJson::object();
        e["id"] = m.id;
        e["object"] = "model";
        e["created"] = 0;
        e["owned_by"] = "hearth";
        e["loaded"] = m.loaded;
        // As llama-server's router reports its models: loaded, loading or unloaded.
        e["status"] = {{"value", m.loaded ? "loaded" : m.loading ? "loading" : "unloaded"}};
        if (m.loaded && m.memoryBytes) e["memory_bytes"] = m.memoryBytes;
        if (m.vision) e["capabilities"] = OJson::array({"vision"});
        return e;
    };
    auto remoteEntry = [](const UpstreamModel& m) {
        OJson e = OJson::object();
        e["id"] = m.id;
        e["object"] = "model";
        e["created"] = 0;
        e["owned_by"] = m.owner;
        return e;
    };
    if (req.matches.size() > 1) {
        const std::string id = req.matches[1];
        for (const ModelEntry& m : models)
            if (m.id == id) {
                sendJson(res, 200, entry(m));
                return;
            }
        for (const UpstreamModel& m : remote)
            if (m.id == id) {
                sendJson(res, 200, remoteEntry(m));
                return;
            }
        ApiError e;
        e.status = 404;
        e.message = "the model '" + id.substr(0, 200) + "' does not exist";
        e.param = "model";
        e.code = "model_not_found";
        sendError(res, e);
        return;
    }
    OJson data = OJson::array();
    for (const ModelEntry& m : models) data.push_back(entry(m));
    for (const UpstreamModel& m : remote) data.push_back(remoteEntry(m));
    sendJson(res, 200, {{"object", "list"}, {"data", std::move(data)}});
}

void Server::Impl::handleTokenize(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseTokenizeRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    auto ref = engineFor("");
    if (!ref) return sendError(res, ref.error());
    const tokenizer::Tokenizer& tok = ref->engine->tokenizer();
    auto ids = tok.encode(parsed->content, parsed->addSpecial, parsed->parseSpecial);
    if (!ids) return sendError(res, apiErrorFromStatus(ids.status(), "content"));
    OJson tokens = OJson::array();
    for (int32_t id : *ids) {
        if (parsed->withPieces) tokens.push_back({{"id", id}, {"piece", tok.tokenPiece(id)}});
        else tokens.push_back(id);
    }
    sendJson(res, 200, {{"tokens", std::move(tokens)}});
}

void Server::Impl::handleDetokenize(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseDetokenizeRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    auto ref = engineFor("");
    if (!ref) return sendError(res, ref.error());
    const tokenizer::Tokenizer& tok = ref->engine->tokenizer();
    for (int32_t id : *parsed)
        if (id >= tok.vocabSize())
            return sendError(res, invalidRequest("token " + std::to_string(id) +
                                                     " is outside the vocabulary (size " +
                                                     std::to_string(tok.vocabSize()) + ")",
                                                 "tokens"));
    tokenizer::DecodeOptions options;
    options.cleanSpaces = false;
    auto text = tok.decode(*parsed, options);
    if (!text) return sendError(res, apiErrorFromStatus(text.status(), "tokens"));
    sendJson(res, 200, {{"content", *text}});
}

} // namespace hearth::server
