// The upstreams' URLs and model lists: parsing --upstream URLs, fetching GET <url>/models at start,
// periodically and on demand, and noting which upstream models a local model hides.
#include "server/upstream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace hearth::server {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kOnDemandGap = std::chrono::seconds(2);
constexpr int kListTimeoutSeconds = 10;

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return s;
}
} // namespace

std::string UpstreamUrl::origin() const {
    const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return scheme + "://" + h + ":" + std::to_string(port);
}

std::string UpstreamUrl::label() const {
    const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return h + ":" + std::to_string(port);
}

Result<UpstreamUrl> parseUpstreamUrl(const std::string& text) {
    auto bad = [&](const std::string& why) {
        return invalidArgument("upstream URL '" + text.substr(0, 200) + "': " + why);
    };
    UpstreamUrl u;
    const size_t sep = text.find("://");
    if (sep == std::string::npos) return bad("expected http://host[:port][/path]");
    u.scheme = lower(text.substr(0, sep));
    if (u.scheme != "http" && u.scheme != "https") return bad("only http and https are supported");
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
    if (u.scheme == "https") return bad("this build has no TLS support; use http");
#endif
    std::string rest = text.substr(sep + 3);
    if (rest.find_first_of("?#") != std::string::npos) return bad("a query or fragment is not allowed");
    const size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    u.basePath = slash == std::string::npos ? "" : rest.substr(slash);
    while (!u.basePath.empty() && u.basePath.back() == '/') u.basePath.pop_back();
    if (authority.find('@') != std::string::npos)
        return bad("credentials in the URL are not supported; use --upstream-key");
    std::string portText;
    if (!authority.empty() && authority[0] == '[') {
        const size_t close = authority.find(']');
        if (close == std::string::npos) return bad("unclosed '[' in the host");
        u.host = authority.substr(1, close - 1);
        const std::string after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') return bad("unexpected text after the host");
            portText = after.substr(1);
        }
    } else {
        const size_t colon = authority.find(':');
        u.host = authority.substr(0, colon);
        if (colon != std::string::npos) portText = authority.substr(colon + 1);
    }
    if (u.host.empty()) return bad("no host");
    u.port = u.scheme == "https" ? 443 : 80;
    if (!portText.empty()) {
        int port = 0;
        auto [p, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
        if (ec != std::errc() || p != portText.data() + portText.size() || port < 1 || port > 65535)
            return bad("the port must be 1..65535");
        u.port = port;
    }
    return u;
}

UpstreamGateway::UpstreamGateway(const ServerConfig& config, LocalIds localIds,
                                 std::function<void(const std::string&)> log)
    : m_config(config), m_localIds(std::move(localIds)), m_log(std::move(log)) {
    for (const UpstreamServer& s : m_config.upstreams) {
        Upstream u;
        u.config = s;
        m_upstreams.push_back(std::move(u));
    }
}

UpstreamGateway::~UpstreamGateway() { stop(); }

Status UpstreamGateway::start() {
    for (Upstream& u : m_upstreams) {
        auto url = parseUpstreamUrl(u.config.url);
        if (!url) return url.status();
        u.url = *url;
    }
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_stop = false;
    }
    m_refresher = std::thread([this] { refreshLoop(); });
    return Status::ok();
}

void UpstreamGateway::stop() {
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_refresher.joinable()) m_refresher.join();
}

void UpstreamGateway::refreshLoop() {
    const auto period = std::chrono::seconds(std::max(1, m_config.upstreamRefreshSeconds));
    for (;;) {
        refreshAll();
        std::unique_lock<std::mutex> lock(m_mu);
        if (m_cv.wait_for(lock, period, [&] { return m_stop; })) return;
    }
}

httplib::Headers UpstreamGateway::headersFor(const Upstream& u) const {
    httplib::Headers h;
    if (!u.config.apiKey.empty()) h.emplace("Authorization", "Bearer " + u.config.apiKey);
    return h;
}

void UpstreamGateway::refreshAll() {
    std::lock_guard<std::mutex> serial(m_refreshMu);
    std::vector<Upstream> snapshot;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        snapshot = m_upstreams;
    }
    for (size_t i = 0; i < snapshot.size(); ++i) {
        const Upstream& u = snapshot[i];
        httplib::Client client(u.url.origin());
        const int connect = std::max(1, std::min(m_config.upstreamConnectTimeoutSeconds, kListTimeoutSeconds));
        client.set_connection_timeout(connect, 0);
        client.set_read_timeout(kListTimeoutSeconds, 0);
        client.set_write_timeout(kListTimeoutSeconds, 0);
        auto r = client.Get((u.url.basePath + "/models").c_str(), headersFor(u));
        std::vector<std::string> ids;
        std::string error;
        if (!r) {
            error = "unreachable (" + httplib::to_string(r.error()) + ")";
        } else if (r->status != 200) {
            error = "GET " + u.url.basePath + "/models answered " + std::to_string(r->status);
        } else {
            auto j = nlohmann::json::parse(r->body, nullptr, false);
            if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) {
                error = "the model list is not {\"data\": [...]}";
            } else {
                for (const auto& m : j["data"])
                    if (m.is_object() && m.contains("id") && m["id"].is_string())
                        ids.push_back(m["id"].get<std::string>());
            }
        }
        std::lock_guard<std::mutex> lock(m_mu);
        if (m_stop) return;
        Upstream& live = m_upstreams[i];
        const std::string where = "upstream " + u.config.url;
        if (error.empty()) {
            if (!live.answered || ids != live.ids || !live.lastError.empty()) {
                std::string names;
                for (size_t k = 0; k < ids.size() && k < 8; ++k) names += (k ? ", " : "") + ids[k];
                if (ids.size() > 8) names += ", ...";
                m_log(where + ": " + std::to_string(ids.size()) + " model" +
                      (ids.size() == 1 ? "" : "s") + (names.empty() ? "" : " (" + names + ")"));
            }
            live.ids = std::move(ids);
            live.answered = true;
            live.lastError.clear();
        } else if (error != live.lastError) {
            m_log(where + ": cannot list models: " + error);
            live.lastError = error;
        }
    }
    const std::vector<std::string> local = m_localIds ? m_localIds() : std::vector<std::string>{};
    std::lock_guard<std::mutex> lock(m_mu);
    reportShadowsLocked(local);
}

void UpstreamGateway::noteLocalModels() {
    const std::vector<std::string> local = m_localIds ? m_localIds() : std::vector<std::string>{};
    std::lock_guard<std::mutex> lock(m_mu);
    reportShadowsLocked(local);
}

void UpstreamGateway::reportShadowsLocked(const std::vector<std::string>& local) {
    std::set<std::string> seen(local.begin(), local.end());
    for (const Upstream& u : m_upstreams)
        for (const std::string& id : u.ids) {
            if (seen.insert(id).second) continue;
            const std::string key = u.url.label() + "\n" + id;
            if (!m_reported.insert(key).second) continue;
            const bool isLocal = std::find(local.begin(), local.end(), id) != local.end();
            m_log("model '" + id + "' of upstream " + u.config.url + " is hidden: " +
                  (isLocal ? "a local model has the same id (local wins)"
                           : "an earlier upstream has the same id"));
        }
}

bool UpstreamGateway::ready() const {
    std::lock_guard<std::mutex> lock(m_mu);
    for (const Upstream& u : m_upstreams)
        if (u.answered) return true;
    return false;
}

std::vector<UpstreamModel> UpstreamGateway::models() const {
    const std::vector<std::string> local = m_localIds ? m_localIds() : std::vector<std::string>{};
    std::set<std::string> seen(local.begin(), local.end());
    std::vector<UpstreamModel> out;
    std::lock_guard<std::mutex> lock(m_mu);
    for (const Upstream& u : m_upstreams)
        for (const std::string& id : u.ids)
            if (seen.insert(id).second) out.push_back({id, u.url.label()});
    return out;
}

int UpstreamGateway::find(const std::string& model) {
    auto lookup = [&]() -> int {
        std::lock_guard<std::mutex> lock(m_mu);
        for (size_t i = 0; i < m_upstreams.size(); ++i)
            for (const std::string& id : m_upstreams[i].ids)
                if (id == model) return int(i);
        return -1;
    };
    if (model.empty()) return -1;
    int found = lookup();
    if (found >= 0) return found;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        const auto now = Clock::now();
        if (m_stop || now - m_lastOnDemand < kOnDemandGap) return -1;
        m_lastOnDemand = now;
    }
    refreshAll();
    return lookup();
}

std::string UpstreamGateway::label(int index) const {
    std::lock_guard<std::mutex> lock(m_mu);
    if (index < 0 || size_t(index) >= m_upstreams.size()) return {};
    return m_upstreams[size_t(index)].url.label();
}

} // namespace hearth::server
