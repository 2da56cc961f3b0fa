// The chat side of a model file: its chat template (or the built-in ChatML one when the GGUF has
// none), its special tokens as the template sees them, and turning a rendered prompt into ids.
#pragma once

#include "hearth/chat_template.h"
#include "hearth/status.h"
#include "hearth/tokenizer.h"

#include <string>
#include <string_view>
#include <vector>

namespace hearth::gguf {
class File;
}

namespace hearth::tmpl {

struct ModelChat {
    ChatTemplate chatTemplate;
    bool builtin = false; // the file has no tokenizer.chat_template; ChatML is used instead
    // {"bos_token", "<s>"}, {"eos_token", "</s>"}, ...: the vocabulary strings of the file's
    // special-token ids (bos, eos, unk, sep, pad), those that exist.
    SpecialTokens specialTokens;

    // Renders `request` with the model's special tokens filled in where the request sets none.
    Result<std::string> render(ChatRequest request, const RenderOptions& options = {}) const;
};

// Reads the template and special tokens of a GGUF (tensor data is not needed). A template that
// does not parse is an error naming the line, never a silent fallback.
Result<ModelChat> modelChatFromGguf(const gguf::File& file);

// A chat with one user message, with the generation prompt (what `hearth-cli run --chat` sends).
ChatRequest singleUserMessage(std::string_view text);

// Ids for a rendered chat prompt: special-token text is parsed, and BOS is added only when the
// vocabulary adds one and the rendered text does not already begin with it.
Result<std::vector<int32_t>> encodeChatPrompt(const tokenizer::Tokenizer& tokenizer,
                                              std::string_view rendered);

} // namespace hearth::tmpl
