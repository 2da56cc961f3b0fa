// `hearth-cli ps`: asks a running hearth-server what it has loaded (GET /api/ps) and what it
// offers (GET /v1/models), over a plain socket: no Qt, no HTTP library.
#include "commands.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hearth::cli {

namespace {

const char* kPsHelp =
    "usage: hearth-cli ps [--host HOST] [--port PORT] [--api-key KEY] [--json]\n"
    "  What a running hearth-server has loaded (GET /api/ps) and the models it serves\n"
    "  (GET /v1/models). Default 127.0.0.1:8080 (the user service's address); the key defaults\n"
    "  to $HEARTH_API_KEY.\n";

struct HttpAnswer {
    int status = 0;
    std::string body;
    std::string error; // non-empty when no answer came
};

// One GET with "Connection: close"; the whole answer is read (small JSON bodies only).
HttpAnswer httpGet(const std::string& host, int port, const std::string& path, const std::string& apiKey) {
    HttpAnswer out;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string portText = std::to_string(port);
    if (int rc = ::getaddrinfo(host.c_str(), portText.c_str(), &hints, &found); rc != 0) {
        out.error = "cannot resolve " + host + ": " + ::gai_strerror(rc);
        return out;
    }
    int fd = -1;
    std::string lastError = "no address";
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            lastError = std::strerror(errno);
            ::close(fd);
            fd = -1;
        }
    }
    ::freeaddrinfo(found);
    if (fd < 0) {
        out.error = lastError;
        return out;
    }
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + portText +
                          "\r\nAccept: application/json\r\nConnection: close\r\n";
    if (!apiKey.empty()) request += "Authorization: Bearer " + apiKey + "\r\n";
    request += "\r\n";
    for (size_t sent = 0; sent < request.size();) {
        const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            out.error = std::string("cannot send the request: ") + std::strerror(errno);
            ::close(fd);
            return out;
        }
        sent += size_t(n);
    }
    std::string raw;
    char buf[16384];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 10000) <= 0) {
            out.error = "no answer within 10 s";
            break;
        }
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        raw.append(buf, size_t(n));
        if (raw.size() > (8u << 20)) break;
    }
    ::close(fd);
    const size_t headEnd = raw.find("\r\n\r\n");
    if (headEnd == std::string::npos || raw.compare(0, 5, "HTTP/") != 0) {
        if (out.error.empty()) out.error = "the answer is not HTTP";
        return out;
    }
    out.error.clear();
    const size_t sp = raw.find(' ');
    out.status = std::atoi(raw.c_str() + sp + 1);
    std::string head = raw.substr(0, headEnd);
    for (char& c : head) c = char(std::tolower(static_cast<unsigned char>(c)));
    out.body = raw.substr(headEnd + 4);
    if (head.find("transfer-encoding: chunked") != std::string::npos) {
        std::string plain;
        size_t pos = 0;
        while (pos < out.body.size()) {
            const size_t eol = out.body.find("\r\n", pos);
            if (eol == std::string::npos) break;
            const size_t len = std::strtoul(out.body.substr(pos, eol - pos).c_str(), nullptr, 16);
            if (len == 0) break;
            plain += out.body.substr(eol + 2, len);
            pos = eol + 2 + len + 2;
        }
        out.body = std::move(plain);
    }
    return out;
}

std::string humanBytes(double b) {
    char text[32];
    if (b >= double(1ull << 30)) std::snprintf(text, sizeof text, "%.1f GB", b / double(1ull << 30));
    else std::snprintf(text, sizeof text, "%.1f MB", b / double(1ull << 20));
    return text;
}

} // namespace

int runPs(Args args) {
    std::string host = "127.0.0.1", apiKey;
    int port = 8080;
    bool json = false;
    if (const char* key = std::getenv("HEARTH_API_KEY")) apiKey = key;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        const bool hasValue = i + 1 < args.size();
        if (a == "-h" || a == "--help") {
            std::fputs(kPsHelp, stdout);
            return 0;
        } else if (a == "--host" && hasValue) {
            host = std::string(args[++i]);
        } else if (a == "--port" && hasValue) {
            const std::string_view v = args[++i];
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), port);
            if (ec != std::errc() || p != v.data() + v.size() || port < 1 || port > 65535) {
                std::fprintf(stderr, "hearth-cli ps: --port needs 1..65535\n");
                return 2;
            }
        } else if (a == "--api-key" && hasValue) {
            apiKey = std::string(args[++i]);
        } else if (a == "--json") {
            json = true;
        } else {
            std::fprintf(stderr, "hearth-cli ps: unknown or incomplete option '%.*s'\n%s", int(a.size()), a.data(),
                         kPsHelp);
            return 2;
        }
    }
    const std::string where = host + ":" + std::to_string(port);
    const HttpAnswer ps = httpGet(host, port, "/api/ps", apiKey);
    if (!ps.error.empty()) {
        std::fprintf(stderr,
                     "hearth-cli ps: no hearth-server is running on %s (%s). Start one with "
                     "'hearth-server --data-dir DIR' or 'systemctl --user start hearth-server'.\n",
                     where.c_str(), ps.error.c_str());
        return 1;
    }
    if (ps.status == 401 || ps.status == 403) {
        std::fprintf(stderr, "hearth-cli ps: the server on %s wants an API key (--api-key or HEARTH_API_KEY)\n",
                     where.c_str());
        return 1;
    }
    const HttpAnswer models = httpGet(host, port, "/v1/models", apiKey);
    const auto loaded = nlohmann::json::parse(ps.body, nullptr, false);
    const auto offered = nlohmann::json::parse(models.body, nullptr, false);
    if (ps.status != 200 || !loaded.is_object()) {
        std::fprintf(stderr, "hearth-cli ps: %s answered /api/ps with HTTP %d: is it a hearth-server?\n",
                     where.c_str(), ps.status);
        return 1;
    }
    if (json) {
        nlohmann::json out = {{"server", where}, {"loaded", loaded.value("models", nlohmann::json::array())}};
        out["available"] = offered.is_object() ? offered.value("data", nlohmann::json::array()) : nlohmann::json::array();
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    const nlohmann::json list = loaded.value("models", nlohmann::json::array());
    std::printf("hearth-server on %s\n", where.c_str());
    if (!list.is_array() || list.empty()) {
        std::printf("no model loaded\n");
    } else {
        std::printf("%-40s %-12s %-10s %-8s %s\n", "NAME", "ARCH", "QUANT", "CONTEXT", "KV CACHE");
        for (const auto& m : list) {
            const nlohmann::json details = m.value("details", nlohmann::json::object());
            std::printf("%-40s %-12s %-10s %-8lld %s\n", m.value("name", std::string("?")).c_str(),
                        details.value("family", std::string("")).c_str(),
                        details.value("quantization_level", std::string("")).c_str(),
                        (long long)m.value("context_length", 0ll), humanBytes(m.value("size", 0.0)).c_str());
        }
    }
    if (offered.is_object() && offered.contains("data") && offered["data"].is_array()) {
        std::string ids;
        for (const auto& m : offered["data"])
            if (m.is_object()) ids += (ids.empty() ? "" : ", ") + m.value("id", std::string("?"));
        std::printf("serves: %s\n", ids.empty() ? "(none)" : ids.c_str());
    }
    return 0;
}

} // namespace hearth::cli
