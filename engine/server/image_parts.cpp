// Base64 and data URIs of images in API requests (OpenAI image_url parts; Ollama and Anthropic
// send plain base64).
#include "server/image_parts.h"

#include "hearth/image.h"

#include <array>

namespace hearth::server {

std::optional<std::string> decodeBase64(std::string_view text) {
    static const std::array<int8_t, 256> value = [] {
        std::array<int8_t, 256> v{};
        v.fill(-1);
        const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < 64; ++i) v[uint8_t(alphabet[i])] = int8_t(i);
        return v;
    }();
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3 + 2);
    uint32_t bits = 0;
    int have = 0;
    for (char c : text) {
        const int8_t v = value[uint8_t(c)];
        if (v < 0) return std::nullopt;
        bits = (bits << 6) | uint32_t(v);
        have += 6;
        if (have >= 8) {
            have -= 8;
            out.push_back(char((bits >> have) & 0xff));
        }
    }
    return out;
}

std::optional<ApiError> readImageUrl(std::string_view url, const std::string& param, std::string& bytes) {
    if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0)
        return invalidRequest("'" + param + "': this server does not fetch image URLs; send the image as a data URI " +
                                  "(data:image/png;base64,...)",
                              param, "unsupported_value");
    if (url.rfind("data:", 0) != 0)
        return invalidRequest("'" + param + "' must be a data URI (data:image/png;base64,...)", param);
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos || url.substr(0, comma).find(";base64") == std::string_view::npos)
        return invalidRequest("'" + param + "' must be a base64 data URI (data:image/png;base64,...)", param);
    std::optional<std::string> decoded = decodeBase64(url.substr(comma + 1));
    if (!decoded) return invalidRequest("'" + param + "' holds data that is not base64", param);
    if (decoded->empty()) return invalidRequest("'" + param + "' holds an empty image", param);
    bytes = std::move(*decoded);
    return std::nullopt;
}

ApiResult<std::vector<int32_t>> encodeChatWithImages(Engine& engine, const tmpl::ChatRequest& chat,
                                                     const std::vector<std::string>& encoded,
                                                     std::vector<PromptImage>& images) {
    const ModelSummary& m = engine.model();
    if (!m.takesImages)
        return invalidRequest("the model (" + m.architecture + ") does not take images", "messages", "model_not_vision");
    if (!engine.projector())
        return invalidRequest("no vision projector is loaded for this model (start hearth-server with --mmproj "
                              "PROJ.gguf)",
                              "messages", "model_not_vision");
    images.clear();
    for (size_t i = 0; i < encoded.size(); ++i) {
        const std::string name = "image " + std::to_string(i + 1);
        const auto* data = reinterpret_cast<const uint8_t*>(encoded[i].data());
        Result<Image> image = decodeImage(std::span<const uint8_t>(data, encoded[i].size()));
        if (!image) return invalidRequest(name + ": " + image.status().message(), "messages", "invalid_image");
        Result<std::shared_ptr<const ImageEmbeddings>> e = engine.encodeImage(*image);
        if (!e) return apiErrorFromStatus(e.status().withContext(name), "messages");
        images.push_back(PromptImage{0, std::move(e).value()});
    }
    Result<std::string> text = engine.renderChat(chat);
    if (!text) return invalidRequest(text.status().message(), "messages");
    const tokenizer::Tokenizer& tok = engine.tokenizer();
    bool addSpecial = true; // unless the template wrote BOS
    if (tok.addBos() && tok.bos() != tokenizer::kNoToken && text->rfind(tok.tokenText(tok.bos()), 0) == 0)
        addSpecial = false;
    Result<std::vector<int32_t>> ids = encodeWithImages(tok, *text, addSpecial, images, *engine.projector(), m.nVocab);
    if (!ids) return invalidRequest(ids.status().message(), "messages");
    return std::move(ids).value();
}

} // namespace hearth::server
