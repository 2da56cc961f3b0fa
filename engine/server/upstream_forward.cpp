// Relaying a request to an upstream: the whole answer for a plain request, and for a stream a
// worker thread reading the upstream's body while the client's chunked response writes what has
// arrived (a client that goes away stops the upstream request). Also the server's hook that picks
// the requests to forward.
#include "server/ollama_api.h"
#include "server/server_impl.h"
#include "server/upstream.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>

namespace hearth::server {

namespace {

using Clock = std::chrono::steady_clock;

ApiError upstreamError(int status, std::string message, std::string code) {
    ApiError e;
    e.status = status;
    e.type = "server_error";
    e.message = std::move(message);
    e.code = std::move(code);
    return e;
}

// The error a failed upstream request becomes: 504 when it ran into the timeout, else 502.
ApiError failureError(httplib::Error error, double seconds, int timeoutSeconds,
                      const std::string& label) {
    if (error == httplib::Error::Read && seconds + 0.5 >= double(timeoutSeconds))
        return upstreamError(504, "upstream " + label + " did not answer within " +
                                      std::to_string(timeoutSeconds) + " s",
                             "upstream_timeout");
    if (error == httplib::Error::ConnectionTimeout)
        return upstreamError(504, "upstream " + label + " did not accept the connection in time",
                             "upstream_timeout");
    if (error == httplib::Error::Connection || error == httplib::Error::BindIPAddress ||
        error == httplib::Error::SSLConnection || error == httplib::Error::SSLServerVerification)
        return upstreamError(502, "upstream " + label + " is unreachable (" +
                                      httplib::to_string(error) + ")",
                             "upstream_unreachable");
    return upstreamError(502, "upstream " + label + " failed: " + httplib::to_string(error),
                         "upstream_error");
}

// One streamed upstream request: the worker thread fills `pending`; the response drains it.
struct Relay {
    explicit Relay(const std::string& origin) : client(origin) {}
    ~Relay() { cancel(); if (worker.joinable()) worker.join(); }
    void cancel() {
        cancelled = true;
        client.stop();
    }

    httplib::Client client;
    std::thread worker;
    std::atomic<bool> cancelled{false};
    std::mutex mu;
    std::condition_variable cv;
    bool headers = false;
    int status = 0;
    std::string contentType;
    std::string pending;
    bool done = false;
    httplib::Error error = httplib::Error::Success;
    double seconds = 0.0;
};

bool isEventStream(const std::string& contentType) {
    return contentType.rfind("text/event-stream", 0) == 0;
}

} // namespace

void UpstreamGateway::forward(int index, const std::string& suffix, const httplib::Request& req,
                              httplib::Response& res, bool stream, const std::atomic<bool>& stopping,
                              bool fromRoot) {
    Upstream u;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        u = m_upstreams[size_t(index)];
    }
    std::string root = u.url.basePath; // the server's root: the base without its "/v1"
    if (root.size() >= 3 && root.compare(root.size() - 3, 3, "/v1") == 0) root.resize(root.size() - 3);
    const std::string path = fromRoot ? root + req.path : u.url.basePath + suffix;
    const int timeout = std::max(1, m_config.upstreamTimeoutSeconds);
    const int connect = std::max(1, m_config.upstreamConnectTimeoutSeconds);
    httplib::Headers headers = headersFor(u);
    headers.emplace("Accept", stream ? "text/event-stream" : "application/json");
    auto sendError = [&](const ApiError& e) {
        res.status = e.status;
        res.set_content(dumpJson(errorJson(e)), "application/json");
    };
    const auto start = Clock::now();
    const ApiError stoppingError = upstreamError(503, "the server is stopping", "server_stopping");

    // A worker thread talks to the upstream for plain requests too, so that stopping the server
    // never waits for an upstream's answer.
    auto relay = std::make_shared<Relay>(u.url.origin());
    relay->client.set_connection_timeout(connect, 0);
    relay->client.set_read_timeout(timeout, 0);
    relay->client.set_write_timeout(timeout, 0);
    Relay* r = relay.get();
    r->worker = std::thread([r, path, headers, body = req.body, start] {
        httplib::Request out;
        out.method = "POST";
        out.path = path;
        out.headers = headers;
        out.set_header("Content-Type", "application/json");
        out.body = body;
        out.response_handler = [r](const httplib::Response& head) {
            std::lock_guard<std::mutex> lock(r->mu);
            r->headers = true;
            r->status = head.status;
            r->contentType = head.get_header_value("Content-Type");
            r->cv.notify_all();
            return !r->cancelled;
        };
        out.content_receiver = [r](const char* data, size_t n, uint64_t, uint64_t) {
            std::lock_guard<std::mutex> lock(r->mu);
            r->pending.append(data, n);
            r->cv.notify_all();
            return !r->cancelled;
        };
        httplib::Response in;
        httplib::Error error = httplib::Error::Success;
        r->client.send(out, in, error);
        std::lock_guard<std::mutex> lock(r->mu);
        r->done = true;
        r->error = error;
        r->seconds = std::chrono::duration<double>(Clock::now() - start).count();
        r->cv.notify_all();
    });

    // Wait for the upstream's answer to begin (or fail).
    {
        std::unique_lock<std::mutex> lock(r->mu);
        while (!r->headers && !r->done) {
            if (stopping) {
                lock.unlock();
                r->cancel();
                return sendError(stoppingError);
            }
            r->cv.wait_for(lock, kPoll);
        }
        if (!r->headers) {
            const ApiError e = failureError(r->error, r->seconds, timeout, u.url.label());
            lock.unlock();
            return sendError(e);
        }
        // A plain answer, an error or anything else that is not a stream is passed back whole.
        if (!stream || r->status != 200 || !isEventStream(r->contentType)) {
            while (!r->done && !stopping) r->cv.wait_for(lock, kPoll);
            if (!r->done) {
                lock.unlock();
                r->cancel();
                return sendError(stoppingError);
            }
            if (r->error != httplib::Error::Success) { // cut off midway
                const ApiError e = failureError(r->error, r->seconds, timeout, u.url.label());
                lock.unlock();
                return sendError(e);
            }
            res.status = r->status;
            res.set_content(r->pending, r->contentType.empty() ? "application/json" : r->contentType);
            return;
        }
    }

    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto lastWrite = std::make_shared<Clock::time_point>(Clock::now());
    auto atBoundary = std::make_shared<bool>(true); // what was written ends an SSE event
    const std::string contentType = r->contentType;
    res.set_chunked_content_provider(
        contentType,
        [relay, lastWrite, atBoundary, &stopping](size_t, httplib::DataSink& sink) {
            Relay* r = relay.get();
            if (stopping || !sink.is_writable()) {
                r->cancel();
                return false;
            }
            std::string out;
            bool done = false;
            {
                std::unique_lock<std::mutex> lock(r->mu);
                r->cv.wait_for(lock, kPoll, [&] { return !r->pending.empty() || r->done; });
                out.swap(r->pending);
                done = r->done;
            }
            const auto now = Clock::now();
            if (out.empty() && *atBoundary && now - *lastWrite >= kKeepAlive)
                out = ": keep-alive\n\n"; // notices a client that went away
            if (!out.empty()) {
                if (!sink.write(out.data(), out.size())) {
                    r->cancel();
                    return false;
                }
                *lastWrite = now;
                *atBoundary = out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0;
            }
            if (done) sink.done();
            return true;
        },
        [relay](bool) { relay->cancel(); });
}

bool forwardToUpstream(Server::Impl& server, const httplib::Request& req, httplib::Response& res) {
    UpstreamGateway* gateway = server.m_gateway.get();
    if (!gateway) return false;
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object()) return false;
    const auto model = body.find("model");
    if (model == body.end() || !model->is_string()) return false;
    const std::string id = model->get<std::string>();
    std::shared_ptr<ModelProvider> provider = server.currentProvider();
    if (provider)
        for (const ModelEntry& m : provider->list())
            if (m.id == id) return false; // local wins
    const int index = gateway->find(id);
    // Ollama's routes go to the upstream's own /api/... (a Hearth or Ollama server), streamed
    // unless the request says otherwise, as Ollama's default is.
    const bool ollama = isOllamaPath(req.path);
    if (index < 0) {
        if (provider || ollama) return false; // the local handler answers as it always has
        ApiError e;
        e.status = 404;
        e.message = "the model '" + id.substr(0, 200) + "' does not exist";
        e.param = "model";
        e.code = "model_not_found";
        server.sendError(res, e);
        return true;
    }
    std::string suffix = req.path;
    if (suffix.rfind("/v1/", 0) == 0) suffix = suffix.substr(3);
    const auto stream = body.find("stream");
    const bool streamed = stream != body.end() && stream->is_boolean() ? stream->get<bool>() : ollama;
    res.set_header("X-Hearth-Upstream", gateway->label(index));
    gateway->forward(index, suffix, req, res, streamed, server.m_stopping, ollama);
    return true;
}

} // namespace hearth::server
