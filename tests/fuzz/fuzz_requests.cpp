// libFuzzer target for everything that reads client input in the server: the OpenAI, Ollama,
// Anthropic and Responses request parsers, base64 and image data URIs, GBNF grammars (parse,
// then match a text), JSON Schema to grammar, the streaming readers of model output (tool calls,
// <think>, harmony), and the images a request carries (PNG, JPEG, GIF, WebP). The first byte
// picks the target; the rest is its input.
#include "hearth/chat_output.h"
#include "hearth/grammar.h"
#include "hearth/image.h"
#include "server/anthropic_request.h"
#include "server/image_parts.h"
#include "server/ollama_api.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace hearth;

namespace {

// Feeds `text` in pieces whose sizes come from the text itself.
template <typename F> void inPieces(std::string_view text, F&& push) {
    size_t i = 0;
    while (i < text.size()) {
        const size_t n = 1 + static_cast<unsigned char>(text[i]) % 7;
        push(text.substr(i, n));
        i += n;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
    server::ParseLimits limits;
    switch (data[0] % 14) {
    case 9: (void)server::parseAnthropicRequest(in, limits, (size & 1) != 0); break;
    case 10: (void)server::parseResponsesRequest(in, limits); break;
    case 11: {
        std::string bytes;
        (void)server::readImageUrl(in, "image_url", bytes);
        break;
    }
    case 12: (void)server::decodeBase64(in); break;
    case 13: {
        ImageLimits small; // a smaller budget than a server's, for the fuzzer's memory limit
        small.maxPixels = 4'000'000;
        auto img = decodeImage(std::span<const uint8_t>(data + 1, size - 1), small);
        if (img && img->rgb.size() != size_t(img->width) * size_t(img->height) * 3) __builtin_trap();
        break;
    }
    case 0: (void)server::parseChatCompletionRequest(in, limits); break;
    case 1: (void)server::parseCompletionRequest(in, limits); break;
    case 2: (void)server::parseOllamaChatRequest(in, limits); break;
    case 3: (void)server::parseOllamaGenerateRequest(in, limits); break;
    case 4: {
        // Grammar text, a NUL, then a text to match (at most 256 bytes).
        const size_t split = in.find('\0');
        auto g = grammar::parseGbnf(in.substr(0, split));
        if (g && split != std::string_view::npos)
            (void)grammar::matchText(**g, in.substr(split + 1, 256));
        break;
    }
    case 5: {
        auto gbnf = grammar::jsonSchemaToGbnf(in);
        if (gbnf) {
            auto g = grammar::parseGbnf(*gbnf);
            if (!g) __builtin_trap(); // the converter must only write grammars that parse
            (void)grammar::matchText(**g, "{\"a\": [1, \"x\", null], \"b\": true}");
        }
        break;
    }
    case 6: {
        server::ToolCallStreamer s;
        inPieces(in, [&](std::string_view p) { (void)s.push(p); });
        (void)server::parseToolCalls(in, {});
        (void)server::mightBeToolCall(in);
        break;
    }
    case 7: {
        tmpl::ReasoningSplitter r(in.size() % 2 == 0);
        inPieces(in, [&](std::string_view p) { (void)r.push(p); });
        (void)r.finish();
        break;
    }
    default: {
        tmpl::HarmonyParser h;
        inPieces(in, [&](std::string_view p) { (void)h.push(p); });
        (void)h.finish();
        break;
    }
    }
    return 0;
}
