// Ollama's library routes: POST /api/pull (progress streamed as NDJSON), DELETE /api/delete and
// POST /api/copy, carried out by the model provider (hearth-server --models-dir / --data-dir); a
// server of one model answers 501.
#include "server/ollama_api.h"
#include "server/server_impl.h"

#include "server/json_fields.h"

namespace hearth::server {

namespace {

void sendLibraryError(httplib::Response& res, const ApiError& e) {
    Server::Impl::sendJson(res, e.status, ollamaErrorJson(e.message));
}

// The provider's refusal as Ollama answers it: 404 for a missing model, 501 where the library
// cannot change, 400 for a bad name, 500 for the file system.
ApiError libraryError(const Status& status) {
    ApiError e = apiErrorFromStatus(status, "model");
    if (status.code() == ErrorCode::Unsupported) e.status = 501;
    return e;
}

// The model named by `key` (older clients send "name"), without Ollama's ":latest" tag.
ApiResult<std::string> modelField(const OJson& body, const char* key) {
    std::string name;
    if (auto e = readString(body, key, name)) return *e;
    if (name.empty())
        return invalidRequest(std::string(key) + " is required", key, "missing_required_parameter");
    return untaggedModel(name);
}

OJson progressJson(const PullProgress& p) {
    OJson j = {{"status", p.status}};
    if (!p.digest.empty()) j["digest"] = p.digest;
    if (p.total) {
        j["total"] = p.total;
        j["completed"] = p.completed;
    }
    return j;
}

} // namespace

void Server::Impl::handleOllamaPull(const httplib::Request& req, httplib::Response& res) {
    auto body = parseJsonObject(req.body, m_limits);
    if (!body) return sendLibraryError(res, body.error());
    auto model = modelField(*body, field(*body, "model") ? "model" : "name");
    if (!model) return sendLibraryError(res, model.error());
    bool stream = true;
    if (auto e = readBool(*body, "stream", stream)) return sendLibraryError(res, *e);
    bool insecure = false; // accepted: the hub address is the server's to choose
    if (auto e = readBool(*body, "insecure", insecure)) return sendLibraryError(res, *e);
    std::shared_ptr<ModelProvider> provider = currentProvider();
    if (!provider) return sendLibraryError(res, libraryError(Status(ErrorCode::Unsupported, "no model library")));
    const std::string name = *model;
    auto keepGoing = [this](const PullProgress&) { return !m_stopping.load(); };
    if (!provider->canPull()) return sendLibraryError(res, libraryError(provider->pullModel(name, keepGoing)));
    if (!stream) {
        Status s = provider->pullModel(name, keepGoing);
        if (!s.isOk()) return sendLibraryError(res, libraryError(s));
        return sendJson(res, 200, {{"status", "success"}});
    }
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "application/x-ndjson", [this, provider, name](size_t, httplib::DataSink& sink) {
            auto send = [&](const OJson& j) {
                const std::string line = j.dump() + "\n";
                return !m_stopping && sink.is_writable() && sink.write(line.data(), line.size());
            };
            Status s = provider->pullModel(name, [&](const PullProgress& p) { return send(progressJson(p)); });
            // Once the stream has begun, a failure is its last line, as Ollama sends it.
            if (s.isOk()) send({{"status", "success"}});
            else if (s.code() != ErrorCode::Cancelled) send(ollamaErrorJson(s.message()));
            sink.done();
            return true;
        });
}

void Server::Impl::handleOllamaDelete(const httplib::Request& req, httplib::Response& res) {
    auto body = parseJsonObject(req.body, m_limits);
    if (!body) return sendLibraryError(res, body.error());
    auto model = modelField(*body, field(*body, "model") ? "model" : "name");
    if (!model) return sendLibraryError(res, model.error());
    std::shared_ptr<ModelProvider> provider = currentProvider();
    if (!provider) return sendLibraryError(res, libraryError(Status(ErrorCode::Unsupported, "no model library")));
    if (Status s = provider->removeModel(*model); !s.isOk()) {
        if (s.code() == ErrorCode::NotFound)
            return sendLibraryError(res, libraryError(notFound("model \"" + model->substr(0, 200) + "\" not found")));
        return sendLibraryError(res, libraryError(s));
    }
    res.status = 200;
}

void Server::Impl::handleOllamaCopy(const httplib::Request& req, httplib::Response& res) {
    auto body = parseJsonObject(req.body, m_limits);
    if (!body) return sendLibraryError(res, body.error());
    auto source = modelField(*body, "source");
    if (!source) return sendLibraryError(res, source.error());
    auto destination = modelField(*body, "destination");
    if (!destination) return sendLibraryError(res, destination.error());
    std::shared_ptr<ModelProvider> provider = currentProvider();
    if (!provider) return sendLibraryError(res, libraryError(Status(ErrorCode::Unsupported, "no model library")));
    if (Status s = provider->copyModel(*source, *destination); !s.isOk()) {
        if (s.code() == ErrorCode::NotFound)
            return sendLibraryError(res, libraryError(notFound("model \"" + source->substr(0, 200) + "\" not found")));
        return sendLibraryError(res, libraryError(s));
    }
    res.status = 200;
}

} // namespace hearth::server
