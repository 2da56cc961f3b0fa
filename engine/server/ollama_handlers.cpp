// The Ollama API endpoints: /api/chat and /api/generate (NDJSON streams by default, one object
// with "stream": false; a disconnect cancels; format as a grammar; think splitting the reasoning
// out), /api/tags, /api/show, /api/ps, /api/version, the "Ollama is running" probe at /, and clear
// errors for what this server does not do.
#include "server/generation_driver.h"
#include "server/upstream.h"

#include "server/image_parts.h"
#include "server/json_fields.h"
#include "server/ollama_api.h"
#include "server/openai_convert.h"
#include "hearth/chat_output.h"
#include "server/structured_output.h"
#include "server/tool_calls.h"

#include "hearth/grammar.h"

#include <algorithm>
#include <chrono>

namespace hearth::server {

namespace {

using Clock = std::chrono::steady_clock;

const char* const kOllamaPaths[] = {"/api/chat", "/api/generate", "/api/tags", "/api/show",
                                    "/api/ps",   "/api/version",  "/api/embed", "/api/embeddings",
                                    "/api/pull", "/api/push",     "/api/create", "/api/copy",
                                    "/api/delete"};

void sendOllamaError(const ServerConfig& config, httplib::Response& res, const ApiError& e) {
    if (e.status == 429)
        res.set_header("Retry-After",
                       std::to_string(config.retryAfterSeconds > 0 ? config.retryAfterSeconds : 1));
    Server::Impl::sendJson(res, e.status, ollamaErrorJson(e.message));
}

ApiError simpleError(int status, std::string message) {
    ApiError e;
    e.status = status;
    e.message = std::move(message);
    return e;
}

// The shape of an Ollama reply: /api/chat's message or /api/generate's response, with timings.
struct OllamaReply {
    bool chat = false;
    std::string model; // as the response reports it
    Clock::time_point start;
    Clock::duration load{};

    OJson part(const std::string& piece, const OJson& toolCalls = nullptr, const std::string& thinking = {}) const {
        return chat ? chatChunk(model, piece, toolCalls, false, thinking) : generateChunk(model, piece, false, thinking);
    }

    // The last object: done, done_reason, timings (and /api/generate's context: the prompt and
    // the generated ids).
    OJson last(const GenerationJob& job, const std::string& body, const OJson& toolCalls,
               const std::string& thinking = {}) const {
        OJson j = chat ? chatChunk(model, body, toolCalls, true, thinking) : generateChunk(model, body, true, thinking);
        j["done_reason"] = ollamaDoneReason(job.reason);
        if (!chat) {
            OJson ctx = OJson::array();
            for (int32_t t : job.prompt) ctx.push_back(t);
            for (int32_t t : job.choices.at(0).ids) ctx.push_back(t);
            j["context"] = std::move(ctx);
        }
        addTimings(j, ollamaTimings(job.usage, Clock::now() - start, load));
        return j;
    }
};

// Ollama's stream: an NDJSON line per piece (thinking apart), tool calls whole in one line at the
// end of the answer (Ollama's clients take them whole), then the last object.
class OllamaFormatter final : public StreamFormatter {
public:
    explicit OllamaFormatter(OllamaReply reply) : m_reply(std::move(reply)) {}

    const char* contentType() const override { return "application/x-ndjson"; }
    std::string begin(const GenerationJob&) override { return {}; }

    std::string reasoning(const GenerationJob&, int32_t, const std::string& piece) override {
        return ndjsonLine(m_reply.part("", nullptr, piece));
    }

    std::string text(const GenerationJob&, int32_t, const std::string& piece,
                     const std::vector<TokenLogprob>&) override {
        return piece.empty() ? std::string() : ndjsonLine(m_reply.part(piece));
    }

    std::string toolCall(const GenerationJob&, int32_t, const ToolCallDelta& d) override {
        if (!d.name.empty()) m_calls.push_back({d.id.empty() ? newToolCallId() : d.id, d.name, ""});
        if (!m_calls.empty()) m_calls.back().arguments += d.arguments;
        return {};
    }

    std::string choiceEnd(const GenerationJob&, int32_t, const ChoiceOutput& rest, bool) override {
        for (const ToolCall& c : rest.calls) m_calls.push_back(c);
        if (!m_calls.empty()) return ndjsonLine(m_reply.part(rest.content, ollamaToolCalls(m_calls)));
        return rest.content.empty() ? std::string() : ndjsonLine(m_reply.part(rest.content));
    }

    std::string end(const GenerationJob& job) override { return ndjsonLine(m_reply.last(job, "", nullptr)); }

    std::string fail(const GenerationJob&, const Status& error) override {
        return ndjsonLine(ollamaErrorJson(apiErrorFromStatus(error).message));
    }

    // An idle stream (a long prompt, a queue) writes a space, which the next JSON line absorbs.
    std::string keepAlive() override { return " "; }

private:
    OllamaReply m_reply;
    std::vector<ToolCall> m_calls;
};

// Submits and answers, whole or as an NDJSON stream.
void answerOllama(Server::Impl& server, OllamaReply reply, std::shared_ptr<Engine> engine,
                  GenerationRequest request, DriveOptions options, bool stream, httplib::Response& res) {
    request.n = 1;
    auto job = submitGeneration(std::move(engine), std::move(request), std::move(options), stream, "num_predict");
    if (!job) return sendOllamaError(server.m_config, res, job.error());
    if (stream) return streamGeneration(server, *job, std::make_shared<OllamaFormatter>(std::move(reply)), res);
    if (auto e = waitForGeneration(server, **job)) {
        if (!(*job)->failed) *e = simpleError(503, "the server is shutting down");
        return sendOllamaError(server.m_config, res, *e);
    }
    const ChoiceOutput out = (*job)->output(0);
    const OJson calls = out.calls.empty() ? OJson(nullptr) : ollamaToolCalls(out.calls);
    Server::Impl::sendJson(res, 200, reply.last(**job, out.content, calls, out.reasoning));
}

// The engine for the request's model, with Ollama's not-found message; `load` gets the time it
// took. The request's keep_alive applies to the model from this request on.
ApiResult<EngineRef> ollamaEngine(Server::Impl& server, const OllamaParams& p, Clock::duration& load) {
    const std::string& model = p.common.model;
    const auto t0 = Clock::now();
    auto ref = server.engineFor(untaggedModel(model));
    load = Clock::now() - t0;
    if (!ref && ref.error().status == 404)
        return simpleError(404, "model \"" + model.substr(0, 200) + "\" not found");
    if (ref && p.keepAliveSeconds)
        if (std::shared_ptr<ModelProvider> provider = server.currentProvider())
            provider->setKeepAlive(ref->modelId, *p.keepAliveSeconds);
    return ref;
}

// Ollama's way to unload a model: no prompt and keep_alive 0. The model is unloaded once no
// request holds it, and is not loaded to be unloaded. False when the request is not one.
bool answeredUnload(Server::Impl& server, const OllamaParams& p, bool chat, httplib::Response& res) {
    if (!p.keepAliveSeconds || *p.keepAliveSeconds != 0.0) return false;
    std::shared_ptr<ModelProvider> provider = server.currentProvider();
    if (!provider) return false;
    const std::string id = untaggedModel(p.common.model);
    bool known = provider->unload(id); // a loaded model, by any name the provider takes
    for (const ModelEntry& m : provider->list()) known = known || m.id == id;
    if (!known) return false; // answered as a load would be: not found, or the one model
    OJson j = chat ? chatChunk(p.common.model, "", nullptr, true) : generateChunk(p.common.model, "", true);
    j["done_reason"] = "unload";
    server.sendJson(res, 200, j);
    return true;
}

// The grammar `format` asks for: any JSON object for "json", the schema's for a schema; null
// for free text. A schema it cannot honour is a 400 naming the part.
ApiResult<GrammarPtr> formatGrammar(const OllamaParams& p) {
    switch (p.format) {
    case OllamaFormat::None: return GrammarPtr();
    case OllamaFormat::Json: {
        auto g = grammar::parseGbnf(grammar::anyJsonObjectGbnf());
        if (!g) return apiErrorFromStatus(g.status(), "format");
        return *g;
    }
    case OllamaFormat::Schema: {
        auto g = schemaGrammar(p.schema, "format");
        if (!g) {
            ApiError e = g.error();
            e.message = "'format': " + e.message;
            return e;
        }
        return *g;
    }
    }
    return GrammarPtr();
}

// The request for `prompt`: Ollama's options mapped, num_predict clamped to the context, the
// format's grammar attached.
ApiResult<GenerationRequest> ollamaGeneration(const Server::Impl& server, const OllamaParams& p,
                                              std::vector<int32_t> prompt, const Engine& engine) {
    auto grammar = formatGrammar(p);
    if (!grammar) return grammar.error();
    CommonParams common = p.common;
    const int32_t ctx = engine.model().contextLength;
    if (p.numPredict) {
        int64_t room = ctx > 0 ? int64_t(ctx) - int64_t(prompt.size()) : *p.numPredict;
        common.maxTokens = int32_t(std::max<int64_t>(1, std::min<int64_t>(*p.numPredict, room)));
    }
    ModelLimits limits{engine.model().nVocab, ctx, server.m_config.defaultMaxTokens};
    auto gen = generationRequest(common, std::move(prompt), limits);
    if (!gen) return gen.error();
    gen->sampling.penaltyLastN = p.repeatLastN;
    gen->grammar = std::move(*grammar);
    return gen;
}

tmpl::ChatRequest templateRequest(OJson messages, const OllamaParams& p) {
    tmpl::ChatRequest chat;
    chat.messages = templateMessages(messages);
    chat.addGenerationPrompt = true;
    OJson kwargs = OJson::object();
    if (p.think) kwargs["enable_thinking"] = *p.think;
    if (!p.thinkLevel.empty()) kwargs["reasoning_effort"] = p.thinkLevel;
    chat.templateKwargsJson = templateKwargsText(kwargs);
    return chat;
}

// think: true (or a level) splits the reasoning out, as a harmony model's output always is (its
// channels are not text for the user); the rendered prompt says how to read the output.
void setUpThinking(DriveOptions& options, Engine& engine, const OllamaParams& p, const tmpl::ChatRequest& request) {
    auto rendered = engine.renderChat(request);
    if (rendered) options.renderedPrompt = std::move(*rendered);
    options.splitReasoning = (p.think && *p.think) || tmpl::promptIsHarmony(options.renderedPrompt);
}

// The facts of `id`: the summary of its engine when it is one of `loaded`.
OllamaModelInfo infoFor(const std::string& id, const std::vector<LoadedModel>& loaded) {
    OllamaModelInfo m;
    m.id = id;
    for (const LoadedModel& l : loaded)
        if (l.entry.id == id) m.summary = &l.engine->model();
    return m;
}

} // namespace

const char* ollamaRouteLabel(const std::string& path) {
    if (path == "/") return "/";
    for (const char* p : kOllamaPaths)
        if (path == p) return p;
    return nullptr;
}

bool isOllamaPath(const std::string& path) {
    return path == "/" || path == "/api" || path.rfind("/api/", 0) == 0;
}

std::string toOllamaErrorBody(const std::string& body) {
    OJson j = OJson::parse(body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object() &&
        j["error"].contains("message") && j["error"]["message"].is_string())
        return dumpJson(ollamaErrorJson(j["error"]["message"].get<std::string>()));
    return body;
}

void Server::Impl::handleOllamaChat(const httplib::Request& req, httplib::Response& res) {
    const auto start = Clock::now();
    auto parsed = parseOllamaChatRequest(req.body, m_limits);
    if (!parsed) return sendOllamaError(m_config, res, parsed.error());
    OllamaChatRequest& chat = *parsed;
    OllamaReply reply;
    reply.start = start;
    if (chat.messages.empty() && answeredUnload(*this, chat.params, true, res)) return;
    auto ref = ollamaEngine(*this, chat.params, reply.load);
    if (!ref) return sendOllamaError(m_config, res, ref.error());
    reply.chat = true;
    reply.model = chat.params.common.model.empty() ? ref->modelId : chat.params.common.model;
    if (chat.messages.empty()) { // Ollama's way to load a model: answered at once
        OJson j = chatChunk(reply.model, "", nullptr, true);
        j["done_reason"] = "load";
        return sendJson(res, 200, j);
    }
    Engine& engine = *ref->engine;
    DriveOptions options;
    options.tools = !chat.tools.empty();
    for (const ToolFunction& f : chat.tools) options.toolNames.push_back(f.name);
    tmpl::ChatRequest tr = templateRequest(std::move(chat.messages), chat.params);
    if (!chat.toolsJson.is_null()) tr.toolsJson = dumpJson(chat.toolsJson);
    std::vector<PromptImage> images;
    auto prompt = chatPrompt(engine, tr, chat.images, images);
    if (!prompt) return sendOllamaError(m_config, res, prompt.error());
    setUpThinking(options, engine, chat.params, tr);
    auto gen = ollamaGeneration(*this, chat.params, std::move(prompt.value()), engine);
    if (!gen) return sendOllamaError(m_config, res, gen.error());
    gen->images = std::move(images);
    answerOllama(*this, std::move(reply), ref->engine, std::move(*gen), std::move(options), chat.params.common.stream,
                 res);
}

void Server::Impl::handleOllamaGenerate(const httplib::Request& req, httplib::Response& res) {
    const auto start = Clock::now();
    auto parsed = parseOllamaGenerateRequest(req.body, m_limits);
    if (!parsed) return sendOllamaError(m_config, res, parsed.error());
    OllamaGenerateRequest& body = *parsed;
    OllamaReply reply;
    reply.start = start;
    if (body.prompt.empty() && body.images.empty() && answeredUnload(*this, body.params, false, res)) return;
    auto ref = ollamaEngine(*this, body.params, reply.load);
    if (!ref) return sendOllamaError(m_config, res, ref.error());
    reply.model = body.params.common.model.empty() ? ref->modelId : body.params.common.model;
    Engine& engine = *ref->engine;
    DriveOptions options;
    options.splitReasoning = false; // a raw prompt's output is read as written
    if (body.prompt.empty() && body.images.empty()) { // a load request
        OJson j = generateChunk(reply.model, "", true);
        j["done_reason"] = "load";
        return sendJson(res, 200, j);
    }
    std::vector<int32_t> prompt = body.context;
    std::vector<PromptImage> images;
    // The images go before the prompt's text, each on its own line, as in a chat's user message.
    std::string text;
    for (size_t i = 0; i < body.images.size(); ++i) text += std::string(kImageMarker) + "\n";
    text += body.prompt;
    if (body.raw) {
        ApiResult<std::vector<int32_t>> ids = std::vector<int32_t>{};
        if (body.images.empty()) {
            auto plain = engine.tokenizer().encode(text, body.context.empty(), true);
            if (!plain) return sendOllamaError(m_config, res, apiErrorFromStatus(plain.status(), "prompt"));
            ids = std::move(*plain);
        } else {
            ids = encodeTextWithImages(engine, text, body.context.empty(), body.images, images, "images");
        }
        if (!ids) return sendOllamaError(m_config, res, ids.error());
        for (PromptImage& image : images) image.at += int32_t(prompt.size());
        prompt.insert(prompt.end(), ids->begin(), ids->end());
    } else {
        OJson messages = OJson::array();
        if (!body.system.empty()) messages.push_back({{"role", "system"}, {"content", body.system}});
        messages.push_back({{"role", "user"}, {"content", std::move(text)}});
        const tmpl::ChatRequest tr = templateRequest(std::move(messages), body.params);
        auto ids = chatPrompt(engine, tr, body.images, images, "prompt");
        if (!ids) return sendOllamaError(m_config, res, ids.error());
        setUpThinking(options, engine, body.params, tr);
        size_t from = 0;
        // After an earlier exchange's tokens the template's BOS would be a second one.
        const int32_t bos = engine.model().bosToken;
        if (!body.context.empty() && !ids->empty() && bos >= 0 && (*ids)[0] == bos) from = 1;
        for (PromptImage& image : images) image.at += int32_t(prompt.size()) - int32_t(from);
        prompt.insert(prompt.end(), ids->begin() + long(from), ids->end());
    }
    auto gen = ollamaGeneration(*this, body.params, std::move(prompt), engine);
    if (!gen) return sendOllamaError(m_config, res, gen.error());
    gen->images = std::move(images);
    answerOllama(*this, std::move(reply), ref->engine, std::move(*gen), std::move(options), body.params.common.stream,
                 res);
}

void Server::Impl::handleOllamaTags(const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<ModelProvider> provider = currentProvider();
    OJson models = OJson::array();
    if (provider) {
        const std::vector<LoadedModel> loaded = provider->loadedModels();
        for (const ModelEntry& m : provider->list()) {
            OllamaModelInfo info = infoFor(m.id, loaded);
            info.fileBytes = m.fileBytes;
            models.push_back(ollamaTagEntry(info));
        }
    }
    // An upstream's models (the gateway's), with the upstream named as Ollama names remote hosts.
    if (m_gateway)
        for (const UpstreamModel& m : m_gateway->models()) {
            OJson e = ollamaTagEntry(OllamaModelInfo{m.id});
            e["remote_host"] = m.owner;
            models.push_back(std::move(e));
        }
    sendJson(res, 200, {{"models", std::move(models)}});
}

void Server::Impl::handleOllamaShow(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseOllamaShowRequest(req.body, m_limits);
    if (!parsed) return sendOllamaError(m_config, res, parsed.error());
    std::shared_ptr<ModelProvider> provider = currentProvider();
    if (!provider || !provider->ready())
        return sendOllamaError(m_config, res, simpleError(503, "the model is still loading"));
    const std::vector<ModelEntry> list = provider->list();
    std::string id = provider->resolve(untaggedModel(parsed->model)); // a file's id, or a hub name
    bool known = !id.empty();
    // One model served under one id takes any name, as the generation endpoints do.
    if (!known && list.size() == 1 && dynamic_cast<SingleModelProvider*>(provider.get())) {
        id = list[0].id;
        known = true;
    }
    if (!known)
        return sendOllamaError(m_config, res,
                               simpleError(404, "model \"" + parsed->model.substr(0, 200) +
                                                    "\" not found"));
    // A model that is not loaded is described without loading it.
    sendJson(res, 200, ollamaShowJson(infoFor(id, provider->loadedModels()), parsed->verbose));
}

void Server::Impl::handleOllamaPs(const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<ModelProvider> provider = currentProvider();
    OJson models = OJson::array();
    if (provider && provider->ready())
        for (const LoadedModel& m : provider->loadedModels()) {
            OllamaModelInfo info{m.entry.id, &m.engine->model()};
            models.push_back(ollamaPsEntry(info, m.entry));
        }
    sendJson(res, 200, {{"models", std::move(models)}});
}

void Server::Impl::handleOllamaVersion(const httplib::Request&, httplib::Response& res) {
    sendJson(res, 200, {{"version", kOllamaApiVersion}});
}

void Server::Impl::handleOllamaRoot(const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content("Ollama is running", "text/plain; charset=utf-8");
}

// handleOllamaEmbed (/api/embed, /api/embeddings) is in embeddings_handlers.cpp.

void Server::Impl::installOllamaRoutes() {
    using httplib::Request;
    using httplib::Response;
    // The security gate's refusals in Ollama's error shape.
    auto route = [this](void (Impl::*handler)(const Request&, Response&)) {
        return [this, handler](const Request& req, Response& res) {
            if (!admit(req, res)) {
                res.set_content(toOllamaErrorBody(res.body), "application/json");
                return;
            }
            (this->*handler)(req, res);
        };
    };
    m_http.Get("/", route(&Impl::handleOllamaRoot)); // httplib answers HEAD from GET routes
    m_http.Get("/api/version", route(&Impl::handleOllamaVersion));
    m_http.Get("/api/tags", route(&Impl::handleOllamaTags));
    m_http.Get("/api/ps", route(&Impl::handleOllamaPs));
    m_http.Post("/api/show", route(&Impl::handleOllamaShow));
    // Requests naming an upstream's model go there as they are (its Ollama routes).
    auto gated = [this](void (Impl::*handler)(const Request&, Response&)) {
        return [this, handler](const Request& req, Response& res) {
            if (!admit(req, res)) {
                res.set_content(toOllamaErrorBody(res.body), "application/json");
                return;
            }
            if (m_gateway && forwardToUpstream(*this, req, res)) {
                // The gateway's own failures (502, 504) in Ollama's shape; an upstream's kept.
                if (res.status >= 400 && !res.body.empty()) res.body = toOllamaErrorBody(res.body);
                return;
            }
            (this->*handler)(req, res);
        };
    };
    m_http.Post("/api/chat", gated(&Impl::handleOllamaChat));
    m_http.Post("/api/generate", gated(&Impl::handleOllamaGenerate));
    m_http.Post("/api/embed", gated(&Impl::handleOllamaEmbed));
    m_http.Post("/api/embeddings", gated(&Impl::handleOllamaEmbed));
    // Model management is the user's files and flags here, not the API's.
    auto unmanaged = [this](const Request& req, Response& res) {
        if (!admit(req, res)) {
            res.set_content(toOllamaErrorBody(res.body), "application/json");
            return;
        }
        sendOllamaError(m_config, res,
                        simpleError(501, req.path + " is not supported: hearth-server serves GGUF "
                                                    "files given by --model or --models-dir and "
                                                    "does not push or create models"));
    };
    for (const char* p : {"/api/push", "/api/create"})
        m_http.Post(p, unmanaged);
    m_http.Post("/api/pull", route(&Impl::handleOllamaPull));
    m_http.Post("/api/copy", route(&Impl::handleOllamaCopy));
    m_http.Delete("/api/delete", route(&Impl::handleOllamaDelete));

    // Known paths with the wrong method: 405 naming the right one.
    auto notAllowed = [this](const char* allow) {
        return [this, allow](const Request& req, Response& res) {
            applyCors(req, res);
            res.set_header("Allow", allow);
            sendOllamaError(m_config, res,
                            simpleError(405, std::string("method not allowed; use ") + allow));
        };
    };
    for (const char* p : {"/api/version", "/api/tags", "/api/ps"}) {
        m_http.Post(p, notAllowed("GET"));
        m_http.Put(p, notAllowed("GET"));
        m_http.Delete(p, notAllowed("GET"));
    }
    for (const char* p : {"/api/show", "/api/chat", "/api/generate", "/api/embed",
                          "/api/embeddings", "/api/pull", "/api/push", "/api/create", "/api/copy"}) {
        m_http.Get(p, notAllowed("POST"));
        m_http.Put(p, notAllowed("POST"));
        m_http.Delete(p, notAllowed("POST"));
    }
}

} // namespace hearth::server
