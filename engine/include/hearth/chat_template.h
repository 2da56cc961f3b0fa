// Chat templates: a sandboxed interpreter for the Jinja subset that model chat templates use, and
// the Hugging Face style rendering of a chat request (variables, continue_final_message).
//
// The interpreter reproduces Python Jinja2 in the environment transformers uses: trim_blocks and
// lstrip_blocks on, `-`/`+` whitespace control, one trailing newline of the source dropped, the
// lenient Undefined, an immutable sandbox (no list/dict mutation, no file, process or environment
// access), loop controls, the `generation` tag, `tojson` as Python json.dumps(ensure_ascii=False),
// and the globals raise_exception, strftime_now, namespace, range, dict.
//
// Every failure is returned as a Status; nothing aborts and no exception escapes:
//   - syntax error: InvalidFormat, "chat template syntax error: line N: ...";
//   - raise_exception(msg): InvalidArgument with exactly msg as the message;
//   - other render errors (Python's TypeError and friends, undefined values used): InvalidArgument,
//     "line N: <Python's wording>";
//   - an exceeded RenderLimits bound: OutOfRange, "line N: ...".
// Deliberate differences from Jinja2: an unknown filter or test fails when it is reached, not when
// the template is compiled; integers are 64-bit (overflow is an error); recursive for-loops,
// include/import/extends/block, cycler/lipsum and the filters groupby, slice, pprint, random,
// striptags, urlize, urlencode, wordwrap, xmlattr and filesizeformat are not provided;
// Jinja's compile-time folding of literal-only expressions (which hides some type errors) is not
// reproduced. Rendering at the default limits needs about 1 MiB of stack.
#pragma once

#include "hearth/chat_message.h"
#include "hearth/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::tmpl {

namespace detail {
struct Program;        // the parsed template (private to the engine)
struct TemplateAccess; // the engine's own way in (rendering from its JSON values)
}

// A wall-clock reading as Python's datetime.now() gives it (local time, no zone).
struct DateTime {
    int year = 1970;
    int month = 1;  // 1..12
    int day = 1;    // 1..31
    int hour = 0;   // 0..23
    int minute = 0; // 0..59
    int second = 0; // 0..60
};

// Bounds on one render; exceeding any of them is an error, never a crash or a hang.
struct RenderLimits {
    size_t maxOutputBytes = size_t(1) << 20;   // the rendered text, and any single built string
    uint64_t maxLoopIterations = 1'000'000;    // all loop iterations of the render together
    uint64_t maxSteps = 50'000'000;            // evaluation steps (expressions, bytes built / 64)
    int maxCallDepth = 100;                    // nested macro calls
    int maxNestingDepth = 1500;                // nested evaluation frames of any kind
    size_t maxContainerItems = size_t(1) << 20; // items in one list or dict built by the template
};

struct RenderOptions {
    RenderLimits limits;
    // The clock behind strftime_now(); empty means the local time of this machine.
    std::function<DateTime()> clock;
};

struct ParseOptions {
    size_t maxSourceBytes = size_t(4) << 20; // longer sources are refused
    int maxNestingDepth = 200;              // nested blocks / parentheses / expression depth
};

// A parsed template. Cheap to copy (the parse is shared, immutable) and safe to render from
// several threads at once.
class ChatTemplate {
public:
    // Parses Jinja source (UTF-8). A syntax error is invalidFormat with "line N: ..." in its message.
    static Result<ChatTemplate> parse(std::string_view source, const ParseOptions& options = {});

    // Renders with the given variables (the text of a JSON object; keys become template
    // variables, JSON objects keep their key order). Variables not given are undefined. Text that
    // is not JSON is InvalidArgument.
    Result<std::string> render(std::string_view variablesJson, const RenderOptions& options = {}) const;

    const std::string& source() const;

private:
    friend struct detail::TemplateAccess;
    explicit ChatTemplate(std::shared_ptr<const detail::Program> program);
    std::shared_ptr<const detail::Program> m_program;
};

// Special tokens of a tokenizer as templates see them, in order: {"bos_token", "<s>"}, ...
using SpecialTokens = std::vector<std::pair<std::string, std::string>>;

// One chat request as transformers' apply_chat_template sees it. Open-ended values (the tools'
// JSON schemas, documents, template kwargs) travel as JSON text, parsed when rendering.
struct ChatRequest {
    std::vector<ChatMessage> messages;
    std::string toolsJson;     // JSON text (an array); empty: no tools (the template sees `tools` = none)
    std::string documentsJson; // JSON text; empty: no documents
    bool addGenerationPrompt = false;
    bool continueFinalMessage = false;
    // Special tokens of the tokenizer. Only the ones present are defined in the template.
    SpecialTokens specialTokens;
    // Extra caller variables as a JSON object's text (e.g. {"enable_thinking": false}); they
    // override everything above. Empty: none.
    std::string templateKwargsJson;
};

// Reads a request from JSON text: "messages", optional "tools", "documents", "add_generation_prompt",
// "continue_final_message", "template_kwargs", and special-token strings (keys ending in
// "_token", e.g. "bos_token"). Unknown keys are ignored. Each message is read as
// chatMessageFromJson reads it, so the template sees it unchanged.
Result<ChatRequest> chatRequestFromJson(std::string_view json);

// Renders the request and applies transformers' continue_final_message post-processing (the
// output is cut right after the final message's text). The variables are in transformers' order:
// messages, tools, documents, add_generation_prompt, the special tokens, then the template kwargs
// (later keys override); JSON text that does not parse is InvalidArgument. continue_final_message together with
// add_generation_prompt is refused, as transformers does.
Result<std::string> applyChatTemplate(const ChatTemplate& chatTemplate, const ChatRequest& request,
                                      const RenderOptions& options = {});

// A ChatML template (<|im_start|>role\ncontent<|im_end|>\n) for models whose GGUF has none.
std::string_view builtinChatMlTemplate();

} // namespace hearth::tmpl
