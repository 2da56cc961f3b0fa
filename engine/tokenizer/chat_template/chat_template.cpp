// The public chat-template API: parse, render, the Hugging Face request rendering
// (variables in transformers' order, continue_final_message) and the ChatML fallback.
#include "hearth/chat_template.h"

#include "tokenizer/chat_template/chat_json.h"
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/parser.h"
#include "tokenizer/chat_template/text_util.h"

#include <exception>
#include <new>

namespace hearth::tmpl {

namespace {

constexpr std::string_view kChatMl =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
    "{%- if message['content'] is string -%}\n"
    "{{- message['content'] -}}\n"
    "{%- elif message['content'] is iterable -%}\n"
    "{%- for part in message['content'] if part is mapping and part['type'] == 'text' -%}\n"
    "{{- part['text'] -}}\n"
    "{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

// Runs f, turning any exception (allocation failure, library error) into a Status.
template <typename F> auto guarded(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        return outOfMemory("out of memory while processing the chat template");
    } catch (const std::exception& e) {
        return internalError(std::string("chat template: ") + e.what());
    } catch (...) {
        return internalError("chat template: unknown exception");
    }
}

} // namespace

namespace detail {
struct TemplateAccess {
    static const Program& program(const ChatTemplate& t) { return *t.m_program; }
};
} // namespace detail

ChatTemplate::ChatTemplate(std::shared_ptr<const detail::Program> program) : m_program(std::move(program)) {}

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, const ParseOptions& options) {
    return guarded([&]() -> Result<ChatTemplate> {
        if (source.size() > options.maxSourceBytes)
            return invalidArgument("chat template is " + std::to_string(source.size()) + " bytes (limit " +
                                   std::to_string(options.maxSourceBytes) + ")");
        Result<std::shared_ptr<detail::Program>> program = parseTemplate(source, options.maxNestingDepth);
        if (!program) return Status(program.status().code(), "chat template syntax error: " + program.status().message());
        return ChatTemplate(std::move(program).value());
    });
}

Result<std::string> renderJson(const ChatTemplate& chatTemplate, const nlohmann::ordered_json& variables,
                               const RenderOptions& options) {
    return guarded([&]() -> Result<std::string> {
        Interp interp(options);
        return interp.render(detail::TemplateAccess::program(chatTemplate), variables);
    });
}

Result<std::string> ChatTemplate::render(std::string_view variablesJson, const RenderOptions& options) const {
    return guarded([&]() -> Result<std::string> {
        const nlohmann::ordered_json variables = nlohmann::ordered_json::parse(variablesJson, nullptr, false);
        if (variables.is_discarded()) return invalidArgument("chat template variables are not valid JSON");
        return renderJson(*this, variables, options);
    });
}

const std::string& ChatTemplate::source() const { return m_program->source; }

Result<std::string> applyChatTemplate(const ChatTemplate& chatTemplate, const ChatRequest& request,
                                      const RenderOptions& options) {
    return guarded([&]() -> Result<std::string> {
        if (request.continueFinalMessage && request.addGenerationPrompt)
            return invalidArgument("continue_final_message and add_generation_prompt are not compatible: use "
                                   "continue_final_message to continue the final message, or add_generation_prompt "
                                   "to start a new assistant turn");
        HEARTH_ASSIGN_OR_RETURN(const nlohmann::ordered_json vars, chatRequestVariables(request));
        HEARTH_ASSIGN_OR_RETURN(std::string out, renderJson(chatTemplate, vars, options));
        if (!request.continueFinalMessage) return out;

        const nlohmann::ordered_json& messages = vars["messages"];
        if (messages.empty()) return invalidArgument("continue_final_message is set but there are no messages");
        const auto& last = messages.back();
        if (!last.is_object() || !last.contains("content"))
            return invalidArgument("continue_final_message is set but the final message has no content");
        const auto& content = last["content"];
        std::string finalText;
        if (content.is_string()) {
            finalText = content.get<std::string>();
        } else if (content.is_array()) {
            bool found = false;
            for (auto it = content.rbegin(); it != content.rend(); ++it) {
                if (it->is_object() && it->contains("text") && (*it)["text"].is_string()) {
                    finalText = (*it)["text"].get<std::string>();
                    found = true;
                    break;
                }
            }
            if (!found)
                return invalidArgument("continue_final_message is set but we could not find any text to continue in "
                                       "the final message!");
        } else {
            return invalidArgument("continue_final_message is set but the final message's content is not text");
        }
        const std::string stripped = pyStrip(finalText, nullptr, true, true);
        const size_t loc = out.rfind(stripped);
        if (loc == std::string::npos)
            return invalidArgument("continue_final_message is set but the final message does not appear in the "
                                   "chat after applying the chat template! This can happen if the chat template "
                                   "deletes portions of the final message.");
        const size_t lstrippedLen = pyStrip(finalText, nullptr, true, false).size();
        if (out.compare(loc, lstrippedLen, finalText) == 0 && loc + lstrippedLen <= out.size())
            out.resize(loc + lstrippedLen);
        else
            out.resize(loc + stripped.size());
        return out;
    });
}

std::string_view builtinChatMlTemplate() { return kChatMl; }

} // namespace hearth::tmpl
