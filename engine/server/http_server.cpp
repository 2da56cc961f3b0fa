// The HTTP side of the server: routes, the security gate (Host check, API key, CORS), JSON error
// responses for everything httplib answers itself (404, 405, 413), and start/stop.
#include "server/anthropic_request.h"
#include "server/ollama_api.h"
#include "server/security.h"
#include "server/progress_log.h"
#include "server/server_impl.h"
#include "server/upstream.h"

#include <chrono>
#include <sys/socket.h>
#include <cstdio>

namespace hearth::server {

namespace {

const char* const kGenerationPaths[] = {"/v1/chat/completions", "/chat/completions",
                                        "/v1/completions", "/completions", "/tokenize",
                                        "/detokenize", "/v1/messages",
                                        "/v1/messages/count_tokens", "/v1/responses",
                                        "/v1/embeddings", "/embeddings", "/v1/rerank",
                                        "/rerank", "/v1/reranking", "/reranking"};
const char* const kReadPaths[] = {"/health", "/metrics", "/v1/models", "/models"};

// A bounded label for metrics: our routes by name, everything else "other".
std::string routeLabel(const std::string& path) {
    for (const char* p : kGenerationPaths)
        if (path == p) return path;
    for (const char* p : kReadPaths)
        if (path == p) return path;
    if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
    if (const char* ollama = ollamaRouteLabel(path)) return ollama;
    return "other";
}

ApiError errorForStatus(int status) {
    ApiError e;
    e.status = status;
    switch (status) {
    case 404:
        e.message = "no such endpoint";
        e.code = "not_found";
        break;
    case 405:
        e.message = "method not allowed on this endpoint";
        e.code = "method_not_allowed";
        break;
    case 413:
        e.message = "request body is too large";
        e.code = "request_too_large";
        break;
    case 414:
        e.message = "request URI is too long";
        e.code = "uri_too_long";
        break;
    case 431:
        e.message = "request headers are too large";
        e.code = "headers_too_large";
        break;
    default:
        if (status >= 500) {
            e.message = "internal server error";
            e.type = "server_error";
            e.code = "internal_error";
        } else {
            e.message = "bad request";
            e.code = "bad_request";
        }
        break;
    }
    return e;
}

} // namespace

Server::Impl::Impl(ServerConfig config) : m_config(std::move(config)) {
    m_limits.maxBodyBytes = m_config.maxBodyBytes;
    m_limits.maxMessages = m_config.maxMessages;
    m_limits.maxTokensCap = m_config.maxTokensCap > 0 ? m_config.maxTokensCap : (1 << 20);
    if (!m_config.upstreams.empty())
        m_gateway = std::make_shared<UpstreamGateway>(
            m_config,
            [this] {
                std::vector<std::string> ids;
                if (auto provider = currentProvider())
                    for (const ModelEntry& m : provider->list()) ids.push_back(m.id);
                return ids;
            },
            [this](const std::string& line) { log(line); });
}

namespace {
// When the request this worker thread serves was routed (the request log's clock).
thread_local std::chrono::steady_clock::time_point t_requestStart{};
thread_local std::string t_requestLabel; // "POST /v1/chat/completions"
} // namespace

ProgressLog requestProgressLog() {
    return ProgressLog(t_requestLabel, t_requestStart == std::chrono::steady_clock::time_point{}
                                           ? std::chrono::steady_clock::now()
                                           : t_requestStart);
}

std::string formatRequestRecord(const RequestRecord& r) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", r.milliseconds);
    std::string line = r.method + " " + r.path + " " + std::to_string(r.status) + " " + ms + " ms";
    if (r.streamed) line += " stream";
    else line += " " + std::to_string(r.responseBytes) + " B";
    if (!r.remote.empty()) line += " " + r.remote;
    if (!r.upstream.empty()) line += " via " + r.upstream;
    return line;
}

void Server::Impl::logRequest(const httplib::Request& req, const httplib::Response& res) const {
    const auto start = t_requestStart;
    t_requestStart = {};
    t_requestLabel.clear();
    if (!m_config.requestLog) return;
    RequestRecord r;
    r.method = req.method;
    r.path = req.path;
    r.remote = req.remote_addr;
    r.status = res.status;
    if (start != std::chrono::steady_clock::time_point{})
        r.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.requestBytes = req.body.size();
    r.streamed = res.is_chunked_content_provider_;
    r.responseBytes = res.body.size();
    r.upstream = res.get_header_value("X-Hearth-Upstream");
    m_config.requestLog(r);
}

void Server::Impl::log(const std::string& message) const {
    if (m_config.log) m_config.log(message);
    else std::fprintf(stderr, "hearth-server: %s\n", message.c_str());
}

void Server::Impl::sendJson(httplib::Response& res, int status, const OJson& body) {
    res.status = status;
    res.set_content(dumpJson(body), "application/json");
}

void Server::Impl::sendError(httplib::Response& res, const ApiError& error) const {
    if (error.status == 429)
        res.set_header("Retry-After", std::to_string(m_config.retryAfterSeconds > 0
                                                         ? m_config.retryAfterSeconds
                                                         : 1));
    sendJson(res, error.status, errorJson(error));
}

void Server::Impl::sendErrorFor(const httplib::Request& req, httplib::Response& res,
                                const ApiError& error) const {
    if (isOllamaPath(req.path)) return sendJson(res, error.status, ollamaErrorJson(error.message));
    if (!isAnthropicPath(req.path)) return sendError(res, error);
    if (error.status == 429)
        res.set_header("Retry-After", std::to_string(m_config.retryAfterSeconds > 0
                                                         ? m_config.retryAfterSeconds
                                                         : 1));
    sendJson(res, error.status, anthropicErrorJson(error));
}

void Server::Impl::applyCors(const httplib::Request& req, httplib::Response& res) const {
    const std::string origin = req.get_header_value("Origin");
    if (!originAllowed(origin, m_config.corsOrigins)) return;
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
}

bool Server::Impl::admit(const httplib::Request& req, httplib::Response& res) {
    applyCors(req, res);
    if (isLoopbackBind(m_config.host) && !hostHeaderAllowed(req.get_header_value("Host"))) {
        ApiError e;
        e.status = 403;
        e.type = "invalid_request_error";
        e.code = "forbidden_host";
        e.message = "the Host header does not name this machine (localhost, 127.0.0.1 or [::1])";
        sendErrorFor(req, res, e);
        return false;
    }
    if (!m_config.apiKey.empty() && req.path != "/health") {
        const std::string key = presentedApiKey(req.get_header_value("Authorization"),
                                                req.get_header_value("x-api-key"));
        if (!constantTimeEquals(key, m_config.apiKey)) {
            ApiError e;
            e.status = 401;
            e.code = "invalid_api_key";
            e.message = key.empty() ? "an API key is required (Authorization: Bearer <key> or "
                                      "x-api-key: <key>)"
                                    : "incorrect API key provided";
            res.set_header("WWW-Authenticate", "Bearer");
            sendErrorFor(req, res, e);
            return false;
        }
    }
    return true;
}

std::shared_ptr<ModelProvider> Server::Impl::currentProvider() const {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_provider;
}

ApiResult<EngineRef> Server::Impl::engineFor(const std::string& model) {
    std::shared_ptr<ModelProvider> provider;
    std::string loadError;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        provider = m_provider;
        loadError = m_loadError;
    }
    ApiError unavailable;
    unavailable.status = 503;
    unavailable.type = "server_error";
    unavailable.code = "model_not_loaded";
    if (!loadError.empty()) {
        unavailable.message = "the model failed to load: " + loadError;
        return unavailable;
    }
    if (!provider || !provider->ready()) {
        unavailable.message = "the model is still loading; try again shortly";
        return unavailable;
    }
    EngineRef ref;
    auto engine = provider->acquire(model, ref.modelId);
    if (!engine) {
        ApiError e = apiErrorFromStatus(engine.status(), "model");
        if (engine.status().code() == ErrorCode::NotFound) e.code = "model_not_found";
        if (engine.status().code() == ErrorCode::OutOfMemory) {
            e.type = "server_error";
            e.code = "model_too_large";
        }
        if (engine.status().code() == ErrorCode::Busy) e.code = "models_busy";
        return e;
    }
    ref.engine = std::move(*engine);
    if (!ref.engine) {
        unavailable.message = "no model is loaded";
        return unavailable;
    }
    return ref;
}

void Server::Impl::installRoutes() {
    using httplib::Request;
    using httplib::Response;
    auto route = [this](void (Impl::*handler)(const Request&, Response&)) {
        return [this, handler](const Request& req, Response& res) {
            if (!admit(req, res)) return;
            (this->*handler)(req, res);
        };
    };
    // The OpenAI generation routes go to an upstream when the request names its model.
    auto gated = [this](void (Impl::*handler)(const Request&, Response&)) {
        return [this, handler](const Request& req, Response& res) {
            if (!admit(req, res)) return;
            if (m_gateway && forwardToUpstream(*this, req, res)) return;
            (this->*handler)(req, res);
        };
    };
    m_http.Post("/v1/chat/completions", gated(&Impl::handleChat));
    m_http.Post("/chat/completions", gated(&Impl::handleChat));
    m_http.Post("/v1/completions", gated(&Impl::handleCompletions));
    m_http.Post("/completions", gated(&Impl::handleCompletions));
    m_http.Post("/tokenize", route(&Impl::handleTokenize));
    m_http.Post("/detokenize", route(&Impl::handleDetokenize));
    m_http.Post("/v1/messages", gated(&Impl::handleAnthropicMessages));
    m_http.Post("/v1/messages/count_tokens", gated(&Impl::handleAnthropicCountTokens));
    m_http.Post("/v1/responses", gated(&Impl::handleResponses));
    m_http.Get("/health", route(&Impl::handleHealth));
    m_http.Get("/metrics", route(&Impl::handleMetrics));
    m_http.Get("/v1/models", route(&Impl::handleModels));
    m_http.Get("/models", route(&Impl::handleModels));
    m_http.Get(R"(/v1/models/(.+))", route(&Impl::handleModels));
    m_http.Post("/v1/embeddings", gated(&Impl::handleEmbeddings));
    m_http.Post("/embeddings", gated(&Impl::handleEmbeddings));
    for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"})
        m_http.Post(path, route(&Impl::handleRerank));
    installOllamaRoutes();

    // Known paths with the wrong method: 405 naming the right one.
    auto notAllowed = [this](const char* allow) {
        return [this, allow](const Request& req, Response& res) {
            applyCors(req, res);
            res.set_header("Allow", allow);
            sendErrorFor(req, res, errorForStatus(405));
        };
    };
    for (const char* p : kGenerationPaths) {
        m_http.Get(p, notAllowed("POST"));
        m_http.Put(p, notAllowed("POST"));
        m_http.Patch(p, notAllowed("POST"));
        m_http.Delete(p, notAllowed("POST"));
    }
    for (const char* p : kReadPaths) {
        m_http.Post(p, notAllowed("GET"));
        m_http.Put(p, notAllowed("GET"));
        m_http.Patch(p, notAllowed("GET"));
        m_http.Delete(p, notAllowed("GET"));
    }

    // CORS preflight: allowed origins get the headers, others a bare 204 the browser refuses.
    m_http.set_pre_routing_handler([](const Request& req, Response&) {
        t_requestStart = std::chrono::steady_clock::now();
        t_requestLabel = req.method + " " + req.path;
        return httplib::Server::HandlerResponse::Unhandled;
    });
    m_http.Options(R"(.*)", [this](const Request& req, Response& res) {
        if (isLoopbackBind(m_config.host) && !hostHeaderAllowed(req.get_header_value("Host"))) {
            admit(req, res);
            return;
        }
        applyCors(req, res);
        if (res.has_header("Access-Control-Allow-Origin")) {
            res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            res.set_header("Access-Control-Allow-Headers",
                           "Authorization, Content-Type, x-api-key, anthropic-version, "
                           "anthropic-beta, OpenAI-Organization, "
                           "OpenAI-Project, X-Stainless-Lang, X-Stainless-Package-Version, "
                           "X-Stainless-OS, X-Stainless-Arch, X-Stainless-Runtime, "
                           "X-Stainless-Runtime-Version, X-Stainless-Retry-Count, "
                           "X-Stainless-Timeout");
            res.set_header("Access-Control-Max-Age", "600");
        }
        res.status = 204;
    });

    // Whatever httplib answers by itself (no route, body too large, bad request line) gets the
    // JSON error shape too.
    m_http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const Request& req, Response& res) {
            if (!res.body.empty() || res.status == 204)
                return httplib::Server::HandlerResponse::Unhandled;
            applyCors(req, res);
            sendErrorFor(req, res, errorForStatus(res.status));
            return httplib::Server::HandlerResponse::Handled;
        }));
    m_http.set_exception_handler([this](const Request& req, Response& res, std::exception_ptr) {
        sendErrorFor(req, res, errorForStatus(500));
    });
    // Counted when the status is final but before the response is sent, so a client that has
    // its answer finds it in /metrics; logged after the response (a stream's after its last byte).
    m_http.set_post_routing_handler([this](const Request& req, Response& res) {
        m_metrics.countRequest(routeLabel(req.path), res.status);
    });
    m_http.set_logger([this](const Request& req, const Response& res) { logRequest(req, res); });
}

Server::Server(ServerConfig config) : m_impl(std::make_unique<Impl>(std::move(config))) {}

Server::~Server() { stop(); }

void Server::setEngine(std::shared_ptr<Engine> engine, std::string modelId) {
    auto provider = std::make_shared<SingleModelProvider>(std::move(engine), std::move(modelId));
    {
        std::lock_guard<std::mutex> lock(m_impl->m_mu);
        m_impl->m_provider = std::move(provider);
        m_impl->m_loadError.clear();
    }
    if (m_impl->m_gateway) m_impl->m_gateway->noteLocalModels();
}

void Server::setModelProvider(std::shared_ptr<ModelProvider> provider) {
    {
        std::lock_guard<std::mutex> lock(m_impl->m_mu);
        m_impl->m_provider = std::move(provider);
        m_impl->m_loadError.clear();
    }
    if (m_impl->m_gateway) m_impl->m_gateway->noteLocalModels();
}

void Server::setLoadError(std::string message) {
    std::lock_guard<std::mutex> lock(m_impl->m_mu);
    m_impl->m_loadError = message.empty() ? "unknown error" : std::move(message);
}

Status Server::start() {
    Impl& s = *m_impl;
    if (s.m_running) return invalidArgument("the server is already running");
    const ServerConfig& c = s.m_config;
    if (c.port < 0 || c.port > 65535)
        return invalidArgument("port " + std::to_string(c.port) + " is outside 0..65535");
    if (!isLoopbackBind(c.host) && c.apiKey.empty())
        s.log("warning: listening on " + c.host +
              " without an API key; anyone who can reach this address can use the model "
              "(set --api-key)");
    const int threads = c.maxConnections > 0 ? c.maxConnections : 128;
    s.m_http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
    s.m_http.set_payload_max_length(c.maxBodyBytes);
    s.m_http.set_read_timeout(c.readTimeoutSeconds > 0 ? c.readTimeoutSeconds : 60, 0);
    s.m_http.set_write_timeout(c.writeTimeoutSeconds > 0 ? c.writeTimeoutSeconds : 60, 0);
    s.m_http.set_tcp_nodelay(true);
    // Keep the listening socket's fd: the packaged library listens with a backlog of 5, too
    // few for bursts of clients, so the backlog is raised after binding.
    std::atomic<int> listenFd{-1};
    s.m_http.set_socket_options([&listenFd](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        listenFd = int(sock);
    });
    if (s.m_gateway)
        if (Status st = s.m_gateway->start(); !st.isOk()) return st;
    s.installRoutes();
    int port = c.port;
    if (port == 0) {
        port = s.m_http.bind_to_any_port(c.host);
        if (port <= 0) return ioError("cannot bind " + c.host + " to a free port");
    } else if (!s.m_http.bind_to_port(c.host, port)) {
        return ioError("cannot bind " + c.host + ":" + std::to_string(port) +
                       " (in use, or not an address of this machine)");
    }
    if (listenFd >= 0) ::listen(listenFd, 1024);
    s.m_http.set_socket_options(httplib::default_socket_options);
    s.m_port = port;
    s.m_stopping = false;
    s.m_running = true;
    s.m_thread = std::thread([&s] { s.m_http.listen_after_bind(); });
    // httplib's stop() only works once the loop runs; wait for it so stop() never hangs.
    for (int i = 0; i < 2000 && !s.m_http.is_running(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.log("listening on http://" + (c.host.find(':') != std::string::npos ? "[" + c.host + "]" : c.host) +
          ":" + std::to_string(port));
    return Status::ok();
}

void Server::stop() {
    Impl& s = *m_impl;
    if (!s.m_running.exchange(false)) return;
    s.m_stopping = true;
    if (std::shared_ptr<ModelProvider> provider = s.currentProvider()) provider->stopWaiting();
    s.m_http.stop();
    if (s.m_thread.joinable()) s.m_thread.join();
    if (s.m_gateway) s.m_gateway->stop();
}

int Server::port() const { return m_impl->m_port; }

bool Server::running() const { return m_impl->m_running; }

} // namespace hearth::server
