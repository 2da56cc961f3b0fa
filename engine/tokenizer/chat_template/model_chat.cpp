// A model file's chat template and special tokens, and the encoding of rendered chat prompts.
#include "hearth/model_chat.h"

#include "hearth/gguf.h"

namespace hearth::tmpl {

Result<std::string> ModelChat::render(ChatRequest request, const RenderOptions& options) const {
    for (const auto& [name, text] : specialTokens) {
        bool set = false;
        for (const auto& token : request.specialTokens) set = set || token.first == name;
        if (!set) request.specialTokens.emplace_back(name, text);
    }
    return applyChatTemplate(chatTemplate, request, options);
}

Result<ModelChat> modelChatFromGguf(const gguf::File& file) {
    std::string source;
    bool builtin = false;
    const gguf::Value* tmplValue = file.find("tokenizer.chat_template");
    if (tmplValue && tmplValue->asString()) {
        source = *tmplValue->asString();
    } else {
        source = std::string(builtinChatMlTemplate());
        builtin = true;
    }
    Result<ChatTemplate> parsed = ChatTemplate::parse(source);
    if (!parsed) return parsed.status().withContext("the model's chat template does not parse");
    ModelChat chat{std::move(*parsed), builtin};

    const gguf::Value* vocab = file.find("tokenizer.ggml.tokens");
    const std::vector<std::string>* strings = vocab ? vocab->asStringArray() : nullptr;
    if (!strings) return chat;
    static const std::pair<const char*, const char*> kSpecial[] = {
        {"tokenizer.ggml.bos_token_id", "bos_token"},     {"tokenizer.ggml.eos_token_id", "eos_token"},
        {"tokenizer.ggml.unknown_token_id", "unk_token"}, {"tokenizer.ggml.separator_token_id", "sep_token"},
        {"tokenizer.ggml.padding_token_id", "pad_token"},
    };
    for (const auto& [key, name] : kSpecial) {
        Result<uint32_t> id = file.getU32(key);
        if (id.isOk() && *id < strings->size()) chat.specialTokens.emplace_back(name, (*strings)[*id]);
    }
    return chat;
}

ChatRequest singleUserMessage(std::string_view text) {
    ChatRequest request;
    ChatMessage message;
    message.role = "user";
    message.content = std::string(text);
    request.messages.push_back(std::move(message));
    request.addGenerationPrompt = true;
    return request;
}

Result<std::vector<int32_t>> encodeChatPrompt(const tokenizer::Tokenizer& tokenizer,
                                              std::string_view rendered) {
    bool addSpecial = true;
    if (tokenizer.addBos() && tokenizer.bos() != tokenizer::kNoToken) {
        const std::string_view bosText = tokenizer.tokenText(tokenizer.bos());
        if (!bosText.empty() && rendered.substr(0, bosText.size()) == bosText) addSpecial = false;
    }
    return tokenizer.encode(rendered, addSpecial, /*parseSpecial=*/true);
}

} // namespace hearth::tmpl
