// The gateway side of the server (hearth-server --upstream): the upstreams' model lists, fetched
// at start, refreshed periodically and when an unknown model is asked for, and the relay of
// requests naming their models (bodies passed through, streams chunk by chunk).
#pragma once

#include "hearth/server.h"
#include "hearth/status.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hearth::server {

// An upstream's base URL taken apart: scheme://host:port/basePath.
struct UpstreamUrl {
    std::string scheme;   // "http" or "https"
    std::string host;     // without brackets for IPv6
    int port = 0;
    std::string basePath; // "/v1" (no trailing slash; may be empty)

    std::string origin() const; // "http://host:port" (what httplib::Client takes)
    std::string label() const;  // "host:port", for logs and owned_by
};

// Errors: not http(s), no host, a bad port, a query, fragment or user part.
Result<UpstreamUrl> parseUpstreamUrl(const std::string& url);

struct UpstreamModel {
    std::string id;
    std::string owner; // the upstream's label
};

class UpstreamGateway {
public:
    using LocalIds = std::function<std::vector<std::string>()>;
    // `localIds`: the ids this server serves itself (they hide upstream models of the same id).
    UpstreamGateway(const ServerConfig& config, LocalIds localIds,
                    std::function<void(const std::string&)> log);
    ~UpstreamGateway(); // stops

    // Checks the URLs; then fetches the lists now (in the background) and every refresh period.
    Status start();
    void stop();

    // At least one upstream has answered its model list.
    bool ready() const;
    // The upstream models not hidden by a local one (the first upstream wins a shared id).
    std::vector<UpstreamModel> models() const;
    // The upstream serving `model`, fetching the lists again (at most every two seconds) when
    // no upstream knows it; -1 when none.
    int find(const std::string& model);
    // Logs the upstream models a local model hides (called when the local models change).
    void noteLocalModels();

    // Relays the request to upstream `index` at basePath + `suffix` (e.g. "/chat/completions"):
    // the body as given, the upstream's key as Bearer, the answer's status and body back (a
    // stream chunk by chunk). Unreachable: 502; silent past the timeout: 504.
    // With fromRoot the request's own path is taken from the server's root (the base URL
    // without its "/v1"): Ollama's /api/... routes.
    void forward(int index, const std::string& suffix, const httplib::Request& req,
                 httplib::Response& res, bool stream, const std::atomic<bool>& stopping,
                 bool fromRoot = false);
    std::string label(int index) const;

private:
    struct Upstream {
        UpstreamServer config;
        UpstreamUrl url;
        std::vector<std::string> ids;
        bool answered = false;
        std::string lastError; // the last fetch's failure ("" after a success)
    };
    void refreshAll();
    void refreshLoop();
    void reportShadowsLocked(const std::vector<std::string>& local);
    httplib::Headers headersFor(const Upstream& u) const;

    ServerConfig m_config;
    LocalIds m_localIds;
    std::function<void(const std::string&)> m_log;
    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::vector<Upstream> m_upstreams;
    std::set<std::string> m_reported; // shadowing already logged
    bool m_stop = false;
    std::thread m_refresher;
    std::mutex m_refreshMu; // one refresh at a time
    std::chrono::steady_clock::time_point m_lastOnDemand{};
};

// The server's hook for the forwardable routes: true when the request named an upstream model
// (or, with no local models, an unknown one: 404) and the response is written.
bool forwardToUpstream(Server::Impl& server, const httplib::Request& req, httplib::Response& res);

} // namespace hearth::server
