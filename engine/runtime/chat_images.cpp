// A chat with images to the prompt the engine takes: each image encoded by the engine's vision
// projector, the rendered chat tokenized around them. The server's dialects and the app share it.
#include "hearth/engine.h"

namespace hearth {

Result<std::vector<int32_t>> encodeChatWithImages(Engine& engine, const tmpl::ChatRequest& chat,
                                                  const std::vector<Image>& decoded,
                                                  std::vector<PromptImage>& images) {
    const ModelSummary& m = engine.model();
    if (!m.takesImages) return unsupported("the model (" + m.architecture + ") does not take images");
    const ProjectorInfo* projector = engine.projector();
    if (!projector) return unsupported("no vision projector is loaded for this model");
    images.clear();
    for (size_t i = 0; i < decoded.size(); ++i) {
        Result<std::shared_ptr<const ImageEmbeddings>> e = engine.encodeImage(decoded[i]);
        if (!e) return e.status().withContext("image " + std::to_string(i + 1));
        images.push_back(PromptImage{0, std::move(e).value()});
    }
    HEARTH_ASSIGN_OR_RETURN(std::string text, engine.renderChat(chat));
    const tokenizer::Tokenizer& tok = engine.tokenizer();
    bool addSpecial = true; // unless the template wrote BOS
    if (tok.addBos() && tok.bos() != tokenizer::kNoToken && text.rfind(tok.tokenText(tok.bos()), 0) == 0)
        addSpecial = false;
    return encodeWithImages(tok, text, addSpecial, images, *projector, m.nVocab);
}

} // namespace hearth
