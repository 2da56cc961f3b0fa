// A stand-in for the Hugging Face hub on 127.0.0.1 (cpp-httplib, own thread): model search, repo
// details (the GGUF architecture), repo trees and file downloads with Range support, plus knobs for slow, stalling, failing, corrupting
// and Range-ignoring behaviour. Every request is logged for the tests to inspect.
#pragma once

#include <httplib.h>

#include <QCryptographicHash>
#include <QString>
#include <QUrl>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace hearth::test {

class TestHub {
public:
    struct LoggedRequest {
        std::string path;
        std::string query; // "k=v&..." as decoded by the server
        std::string range; // the Range header, "" when absent
        std::string authorization;
        std::map<std::string, std::string> params;
    };

    struct File {
        std::string content;
        std::string advertisedSha256; // what the tree says (default: the content's)
        std::string served;           // what downloads get (default: the content)
    };

    // Download behaviour; change between requests.
    std::atomic<size_t> chunkBytes{64 * 1024};
    std::atomic<int> chunkDelayMs{0};
    std::atomic<bool> ignoreRange{false};
    std::atomic<int> stallRequests{0};      // this many downloads stop sending after stallAfter
    std::atomic<size_t> stallAfter{0};
    std::atomic<int> cutRequests{0};        // this many downloads close the connection after cutAfter
    std::atomic<size_t> cutAfter{0};
    std::atomic<int> failRequests{0};       // this many downloads answer 503 first
    std::atomic<bool> requireToken{false};  // downloads and trees need "Bearer secret"
    std::atomic<int> searchStatus{200};
    std::string searchBody;                 // JSON returned by /api/models (when set)
    std::atomic<int> treePageSize{0};       // >0: tree answers come in pages (Link: rel="next")

    TestHub() {
        m_server.Get("/api/models", [this](const httplib::Request& req, httplib::Response& res) {
            log(req);
            if (searchStatus != 200) {
                res.status = searchStatus;
                res.set_content(R"({"error":"search is down"})", "application/json");
                return;
            }
            res.set_content(searchBody.empty() ? defaultSearch() : searchBody, "application/json");
        });
        m_server.Get(R"(/api/models/([^/]+)/([^/]+)/tree/main)",
                     [this](const httplib::Request& req, httplib::Response& res) { tree(req, res); });
        m_server.Get(R"(/api/models/([^/]+)/([^/]+))",
                     [this](const httplib::Request& req, httplib::Response& res) { details(req, res); });
        m_server.Get(R"(/([^/]+)/([^/]+)/resolve/main/(.+))",
                     [this](const httplib::Request& req, httplib::Response& res) { download(req, res); });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
    }

    ~TestHub() {
        m_stopping = true;
        m_server.stop();
        if (m_thread.joinable()) m_thread.join();
    }

    QUrl baseUrl() const { return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_port)); }

    void addFile(const std::string& repo, const std::string& path, File file) {
        if (file.advertisedSha256.empty()) file.advertisedSha256 = sha256(file.content);
        if (file.served.empty()) file.served = file.content;
        std::lock_guard lock(m_mutex);
        m_repos[repo][path] = std::move(file);
    }

    // What /api/models/{repo}?expand[]=gguf reports as gguf.architecture ("" leaves gguf out).
    void setArchitecture(const std::string& repo, const std::string& architecture) {
        std::lock_guard lock(m_mutex);
        m_architectures[repo] = architecture;
        m_repos[repo];
    }

    std::vector<LoggedRequest> requests() const {
        std::lock_guard lock(m_mutex);
        return m_log;
    }
    std::vector<LoggedRequest> downloads() const {
        std::vector<LoggedRequest> out;
        for (const auto& r : requests())
            if (r.path.find("/resolve/") != std::string::npos) out.push_back(r);
        return out;
    }

    static std::string sha256(const std::string& data) {
        return QCryptographicHash::hash(QByteArray::fromStdString(data), QCryptographicHash::Sha256)
            .toHex()
            .toStdString();
    }

    // Deterministic bytes that are not all alike.
    static std::string makeContent(size_t size, uint32_t seed = 1) {
        std::string s(size, '\0');
        uint32_t x = seed * 2654435761u + 1;
        for (size_t i = 0; i < size; ++i) {
            x = x * 1664525u + 1013904223u;
            s[i] = char(x >> 24);
        }
        return s;
    }

private:
    void log(const httplib::Request& req) {
        LoggedRequest r;
        r.path = req.path;
        r.range = req.get_header_value("Range");
        r.authorization = req.get_header_value("Authorization");
        for (const auto& [k, v] : req.params) {
            r.params[k] = v;
            r.query += (r.query.empty() ? "" : "&") + k + "=" + v;
        }
        std::lock_guard lock(m_mutex);
        m_log.push_back(std::move(r));
    }

    std::string defaultSearch() const {
        return R"([{"_id":"1","id":"acme/tiny-GGUF","downloads":1234,"likes":56,
                    "lastModified":"2025-01-02T03:04:05.000Z","tags":["gguf","llama"],
                    "pipeline_tag":"text-generation"},
                   {"id":"acme/other-GGUF","downloads":"7","likes":0,"gated":"manual"}])";
    }

    bool authorized(const httplib::Request& req, httplib::Response& res) const {
        if (!requireToken || req.get_header_value("Authorization") == "Bearer secret") return true;
        res.status = 401;
        res.set_content(R"({"error":"Invalid credentials in Authorization header"})", "application/json");
        return false;
    }

    void tree(const httplib::Request& req, httplib::Response& res) {
        log(req);
        if (!authorized(req, res)) return;
        const std::string repo = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
        std::lock_guard lock(m_mutex);
        auto it = m_repos.find(repo);
        if (it == m_repos.end()) {
            res.status = 404;
            res.set_content(R"({"error":"Repository not found"})", "application/json");
            return;
        }
        std::vector<std::string> entries;
        entries.push_back(R"({"type":"directory","oid":"abc","size":0,"path":"sub"})");
        entries.push_back(R"({"type":"file","oid":"0123","size":12,"path":"README.md"})");
        for (const auto& [path, f] : it->second)
            entries.push_back(R"({"type":"file","oid":"1234","size":)" + std::to_string(f.content.size()) +
                              R"(,"lfs":{"oid":")" + f.advertisedSha256 + R"(","size":)" +
                              std::to_string(f.content.size()) + R"(,"pointerSize":134},"path":")" + path +
                              R"("})");
        size_t from = 0, to = entries.size();
        if (treePageSize > 0) {
            from = req.has_param("cursor") ? std::stoul(req.get_param_value("cursor")) : 0;
            to = std::min(entries.size(), from + size_t(treePageSize));
            if (to < entries.size())
                res.set_header("Link", "<" + req.path + "?recursive=true&cursor=" + std::to_string(to) +
                                           ">; rel=\"next\"");
        }
        std::string body = "[";
        for (size_t i = from; i < to; ++i) body += (i > from ? "," : "") + entries[i];
        body += "]";
        res.set_content(body, "application/json");
    }

    // The hub's answer to /api/models/{repo}?expand[]=gguf: gguf holds what it read from one of
    // the repository's GGUF files.
    void details(const httplib::Request& req, httplib::Response& res) {
        log(req);
        if (!authorized(req, res)) return;
        const std::string repo = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
        std::lock_guard lock(m_mutex);
        if (!m_repos.count(repo)) {
            res.status = 404;
            res.set_content(R"({"error":"Repository not found"})", "application/json");
            return;
        }
        std::string body = R"({"_id":"1","id":")" + repo + R"(")";
        const auto arch = m_architectures.find(repo);
        if (arch != m_architectures.end() && !arch->second.empty() &&
            req.get_param_value("expand[]") == "gguf")
            body += R"(,"gguf":{"total":494032768,"architecture":")" + arch->second +
                    R"(","context_length":32768})";
        res.set_content(body + "}", "application/json");
    }

    void download(const httplib::Request& req, httplib::Response& res) {
        log(req);
        // We answer ranges ourselves (or ignore them on purpose), so httplib must not.
        const_cast<httplib::Request&>(req).ranges.clear();
        if (!authorized(req, res)) return;
        if (failRequests > 0) {
            --failRequests;
            res.status = 503;
            res.set_content("busy", "text/plain");
            return;
        }
        const std::string repo = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
        std::shared_ptr<const std::string> data;
        {
            std::lock_guard lock(m_mutex);
            auto r = m_repos.find(repo);
            if (r != m_repos.end()) {
                auto f = r->second.find(std::string(req.matches[3]));
                if (f != r->second.end()) data = std::make_shared<const std::string>(f->second.served);
            }
        }
        if (!data) {
            res.status = 404;
            res.set_content("Entry not found", "text/plain");
            return;
        }
        size_t start = 0;
        static const std::regex rangeRe(R"(bytes=(\d+)-)");
        std::smatch m;
        const std::string range = req.get_header_value("Range");
        if (!ignoreRange && std::regex_search(range, m, rangeRe)) {
            start = std::stoul(m[1]);
            if (start >= data->size()) {
                res.status = 416;
                res.set_header("Content-Range", "bytes */" + std::to_string(data->size()));
                return;
            }
            res.status = 206;
            res.set_header("Content-Range", "bytes " + std::to_string(start) + "-" +
                                                std::to_string(data->size() - 1) + "/" +
                                                std::to_string(data->size()));
        } else {
            res.status = 200;
        }
        bool stall = false;
        if (stallRequests > 0) {
            --stallRequests;
            stall = true;
        }
        const size_t stallAt = stallAfter;
        bool cut = false;
        if (cutRequests > 0) {
            --cutRequests;
            cut = true;
        }
        const size_t cutAt = cutAfter;
        res.set_content_provider(
            data->size() - start, "application/octet-stream",
            [this, data, start, stall, stallAt, cut, cutAt](size_t offset, size_t length, httplib::DataSink& sink) {
                if (cut && offset >= cutAt) return false; // the connection closes mid-body
                if (stall && offset >= stallAt) {
                    // Keep the connection open and send nothing, until the hub stops or 5 s pass.
                    for (int i = 0; i < 250 && !m_stopping; ++i)
                        std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    return false;
                }
                size_t n = std::min(length, chunkBytes.load());
                if (stall && offset < stallAt) n = std::min(n, stallAt - offset);
                if (cut && offset < cutAt) n = std::min(n, cutAt - offset);
                if (chunkDelayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(chunkDelayMs));
                if (m_stopping) return false;
                return sink.write(data->data() + start + offset, n);
            });
    }

    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    std::atomic<bool> m_stopping{false};
    mutable std::mutex m_mutex;
    std::map<std::string, std::map<std::string, File>> m_repos;
    std::map<std::string, std::string> m_architectures;
    std::vector<LoggedRequest> m_log;
};

} // namespace hearth::test
