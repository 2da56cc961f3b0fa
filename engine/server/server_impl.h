// The server's internals shared by its source files: the httplib server, configuration, the
// model provider and the metrics, and the request handlers.
#pragma once

#include "hearth/server.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/openai_request.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace hearth::server {

// How long a handler waiting on a request (or on the server stopping) sleeps between checks.
inline constexpr auto kPoll = std::chrono::milliseconds(50);
// A streamed body silent this long writes a keep-alive, so that a vanished client is noticed.
inline constexpr auto kKeepAlive = std::chrono::seconds(1);

using OJson = nlohmann::ordered_json;
class UpstreamGateway;

struct EngineRef {
    std::shared_ptr<Engine> engine;
    std::string modelId;
};

// Serves the one engine given to Server::setEngine(); any requested model name maps to it.
class SingleModelProvider final : public ModelProvider {
public:
    SingleModelProvider(std::shared_ptr<Engine> engine, std::string id)
        : m_engine(std::move(engine)), m_id(std::move(id)) {}
    std::vector<ModelEntry> list() override { return {{m_id, true, m_engine && m_engine->model().vision}}; }
    Result<std::shared_ptr<Engine>> acquire(const std::string&, std::string& resolvedId) override {
        resolvedId = m_id;
        return m_engine;
    }
    bool ready() const override { return m_engine != nullptr; }
    std::shared_ptr<Engine> loaded() const override { return m_engine; }

private:
    std::shared_ptr<Engine> m_engine;
    std::string m_id;
};

class Server::Impl {
public:
    explicit Impl(ServerConfig config);

    void log(const std::string& message) const;
    // One line of the request log (ServerConfig::requestLog), after the response is written.
    void logRequest(const httplib::Request& req, const httplib::Response& res) const;
    void installRoutes();
    // Host check, API key and CORS headers; false when the response is already an error.
    bool admit(const httplib::Request& req, httplib::Response& res);
    void applyCors(const httplib::Request& req, httplib::Response& res) const;
    static void sendJson(httplib::Response& res, int status, const OJson& body);
    void sendError(httplib::Response& res, const ApiError& error) const;
    // The engine for a request's `model`, or the error to send (503 while loading).
    ApiResult<EngineRef> engineFor(const std::string& model);
    std::shared_ptr<ModelProvider> currentProvider() const;

    void handleChat(const httplib::Request& req, httplib::Response& res);
    void handleCompletions(const httplib::Request& req, httplib::Response& res);
    void handleModels(const httplib::Request& req, httplib::Response& res);
    void handleHealth(const httplib::Request& req, httplib::Response& res);
    void handleMetrics(const httplib::Request& req, httplib::Response& res);
    void handleTokenize(const httplib::Request& req, httplib::Response& res);
    void handleDetokenize(const httplib::Request& req, httplib::Response& res);
    // Anthropic Messages API (anthropic_handlers.cpp) and OpenAI Responses API
    // (responses_handlers.cpp).
    void handleAnthropicMessages(const httplib::Request& req, httplib::Response& res);
    void handleAnthropicCountTokens(const httplib::Request& req, httplib::Response& res);
    void handleResponses(const httplib::Request& req, httplib::Response& res);
    // sendError in the error shape of the API the request's path belongs to (Anthropic's for
    // /v1/messages*, Ollama's for its paths, OpenAI's otherwise).
    void sendErrorFor(const httplib::Request& req, httplib::Response& res,
                      const ApiError& error) const;

    // The Ollama API (ollama_handlers.cpp); installRoutes() calls installOllamaRoutes().
    void installOllamaRoutes();
    void handleOllamaRoot(const httplib::Request& req, httplib::Response& res);
    void handleOllamaChat(const httplib::Request& req, httplib::Response& res);
    void handleOllamaGenerate(const httplib::Request& req, httplib::Response& res);
    void handleOllamaTags(const httplib::Request& req, httplib::Response& res);
    void handleOllamaShow(const httplib::Request& req, httplib::Response& res);
    void handleOllamaPs(const httplib::Request& req, httplib::Response& res);
    void handleOllamaVersion(const httplib::Request& req, httplib::Response& res);
    void handleOllamaEmbed(const httplib::Request& req, httplib::Response& res);
    void handleOllamaPull(const httplib::Request& req, httplib::Response& res); // ollama_library.cpp
    void handleOllamaDelete(const httplib::Request& req, httplib::Response& res);
    void handleOllamaCopy(const httplib::Request& req, httplib::Response& res);

    // POST /v1/embeddings and /embeddings (embeddings_handlers.cpp).
    void handleEmbeddings(const httplib::Request& req, httplib::Response& res);
    void handleRerank(const httplib::Request& req, httplib::Response& res); // rerank.cpp

    ServerConfig m_config;
    ParseLimits m_limits;
    httplib::Server m_http;
    std::thread m_thread;
    std::atomic<bool> m_stopping{false};
    std::atomic<bool> m_running{false};
    int m_port = 0;
    Metrics m_metrics;
    mutable std::mutex m_mu;
    std::shared_ptr<ModelProvider> m_provider;
    std::string m_loadError;
    // The upstreams this server forwards to (hearth-server --upstream); null without any.
    std::shared_ptr<UpstreamGateway> m_gateway;
};

} // namespace hearth::server
