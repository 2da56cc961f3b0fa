// Request preparation shared by the chat dialects: prompt, limits, speculation, grammar, and the
// driver's reading options.
#include "server/generation_setup.h"

#include "server/image_parts.h"
#include "server/openai_convert.h"

namespace hearth::server {

ApiResult<PreparedGeneration> prepareChat(Server::Impl& server, const ChatCompletionRequest& chat,
                                          const tmpl::ChatRequest& templateRequest, const ChatFieldNames& names) {
    PreparedGeneration out;
    auto ref = server.engineFor(chat.common.model);
    if (!ref) return ref.error();
    out.model = std::move(*ref);
    Engine& engine = *out.model.engine;
    std::vector<PromptImage> images;
    auto prompt = chatPrompt(engine, templateRequest, chat.images, images, names.prompt);
    if (!prompt) return prompt.error();
    DriveOptions& options = out.options;
    options.tools = !chat.tools.empty() && chat.toolChoice.mode != ToolChoiceMode::None;
    for (const ToolFunction& f : chat.tools) options.toolNames.push_back(f.name);
    options.splitReasoning = chat.splitReasoning;
    options.logprobs = chat.common.logprobs;
    if (chat.splitReasoning)
        if (auto rendered = engine.renderChat(templateRequest)) options.renderedPrompt = std::move(*rendered);
    const ModelLimits limits{engine.model().nVocab, engine.model().contextLength,
                             server.m_config.defaultMaxTokens};
    auto gen = generationRequest(chat.common, std::move(*prompt), limits);
    if (!gen) return gen.error();
    gen->images = std::move(images);
    if (auto e = applySpeculation(chat.common, engine.tokenizer(), limits, *gen)) return *e;
    auto grammar = requestGrammar(engine, chat, options.tools, names.format);
    if (!grammar) return grammar.error();
    gen->grammar = *grammar;
    out.request = std::move(*gen);
    return out;
}

ApiResult<GrammarPtr> requestGrammar(const Engine& engine, const ChatCompletionRequest& chat,
                                     bool tools, const std::string& formatParam) {
    GrammarPtr grammar;
    const ResponseFormat& format = chat.common.responseFormat;
    if (format.kind == ResponseFormat::Kind::JsonSchema && !formatParam.empty()) {
        auto g = schemaGrammar(format.schema, formatParam + ".schema", format.strict);
        if (!g) return g.error();
        grammar = *g;
    } else {
        auto g = outputGrammar(chat.common);
        if (!g) {
            ApiError e = g.error();
            if (!formatParam.empty()) e.param = formatParam;
            return e;
        }
        grammar = *g;
    }
    if (!tools) return grammar;
    auto calls = toolCallGrammar(chat.tools, chat.toolChoice, detectToolCallStyle(engine));
    if (!calls) return calls.error();
    const std::string field = formatParam.empty() ? "'response_format' or 'grammar'" : "'" + formatParam + "'";
    if (*calls && grammar) return invalidRequest("a required tool call cannot also follow " + field, "tool_choice");
    if (*calls) grammar = *calls;
    return grammar;
}

ApiError templateError(const Status& status, const std::string& param) {
    ApiError e = apiErrorFromStatus(status, param);
    if (e.status >= 500) {
        e.status = 400; // the template refused this conversation
        e.type = "invalid_request_error";
        e.code = "invalid_value";
    }
    return e;
}

} // namespace hearth::server
