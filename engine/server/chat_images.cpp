// A request's images to the prompt the engine takes: each image's bytes decoded (errors name it),
// then hearth::encodeChatWithImages for chats, or encoded one by one for a raw prompt; the
// engine's refusals as the API's 400s. chatPrompt is what every chat dialect calls.
#include "hearth/image.h"
#include "server/image_parts.h"
#include "server/generation_setup.h"

namespace hearth::server {

namespace {

std::optional<ApiError> refuseUnlessVision(Engine& engine, const std::string& param) {
    const ModelSummary& m = engine.model();
    if (!m.takesImages)
        return invalidRequest("the model (" + m.architecture + ") does not take images", param, "model_not_vision");
    if (!engine.projector())
        return invalidRequest("no vision projector is loaded for this model (start hearth-server with --mmproj "
                              "PROJ.gguf, or put the model's mmproj file beside it)",
                              param, "model_not_vision");
    return std::nullopt;
}

ApiResult<std::vector<Image>> decodeImages(const std::vector<std::string>& encoded, const std::string& param) {
    std::vector<Image> decoded;
    decoded.reserve(encoded.size());
    for (size_t i = 0; i < encoded.size(); ++i) {
        const auto* data = reinterpret_cast<const uint8_t*>(encoded[i].data());
        Result<Image> image = decodeImage(std::span<const uint8_t>(data, encoded[i].size()));
        if (!image)
            return invalidRequest("image " + std::to_string(i + 1) + ": " + image.status().message(), param,
                                  "invalid_image");
        decoded.push_back(std::move(image).value());
    }
    return decoded;
}

ApiError imageError(const Status& s, const std::string& param) {
    if (s.code() == ErrorCode::InvalidArgument) return invalidRequest(s.message(), param);
    return apiErrorFromStatus(s, param);
}

} // namespace

ApiResult<std::vector<int32_t>> encodeChatWithImages(Engine& engine, const tmpl::ChatRequest& chat,
                                                     const std::vector<std::string>& encoded,
                                                     std::vector<PromptImage>& images, const std::string& param) {
    if (auto e = refuseUnlessVision(engine, param)) return *e;
    auto decoded = decodeImages(encoded, param);
    if (!decoded) return decoded.error();
    Result<std::vector<int32_t>> ids = hearth::encodeChatWithImages(engine, chat, decoded.value(), images);
    if (!ids) return imageError(ids.status(), param);
    return std::move(ids).value();
}

ApiResult<std::vector<int32_t>> encodeTextWithImages(Engine& engine, std::string_view text, bool addSpecial,
                                                     const std::vector<std::string>& encoded,
                                                     std::vector<PromptImage>& images, const std::string& param) {
    if (auto e = refuseUnlessVision(engine, param)) return *e;
    auto decoded = decodeImages(encoded, param);
    if (!decoded) return decoded.error();
    images.clear();
    for (size_t i = 0; i < decoded->size(); ++i) {
        Result<std::shared_ptr<const ImageEmbeddings>> e = engine.encodeImage((*decoded)[i]);
        if (!e) return imageError(e.status().withContext("image " + std::to_string(i + 1)), param);
        images.push_back(PromptImage{0, std::move(e).value()});
    }
    Result<std::vector<int32_t>> ids = encodeWithImages(engine.tokenizer(), text, addSpecial, images,
                                                        *engine.projector(), engine.model().nVocab);
    if (!ids) return imageError(ids.status(), param);
    return std::move(ids).value();
}

ApiResult<std::vector<int32_t>> chatPrompt(Engine& engine, const tmpl::ChatRequest& chat,
                                           const std::vector<std::string>& encoded, std::vector<PromptImage>& images,
                                           const std::string& param) {
    if (!encoded.empty()) return encodeChatWithImages(engine, chat, encoded, images, param);
    images.clear();
    Result<std::vector<int32_t>> ids = engine.encodeChat(chat);
    if (!ids) return templateError(ids.status(), param);
    return std::move(ids).value();
}

} // namespace hearth::server
