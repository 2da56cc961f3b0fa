// A chat request's images to the prompt the engine takes: each image decoded and encoded by the
// engine's vision projector, the rendered chat tokenized around them (encodeChatWithImages).
#include "hearth/image.h"
#include "server/image_parts.h"

namespace hearth::server {

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
