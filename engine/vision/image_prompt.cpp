// Prompt text with image markers to ids: the text between markers and each image's begin and
// end text tokenized piece by piece, as llama.cpp's mtmd does, around the images' placeholder
// ids (encodeWithImages).
#include "hearth/engine.h"

namespace hearth {

Result<std::vector<int32_t>> encodeWithImages(const tokenizer::Tokenizer& tokenizer, std::string_view text,
                                              bool addSpecial, std::vector<PromptImage>& images,
                                              const ProjectorInfo& projector, int32_t nVocab) {
    if (images.empty()) return tokenizer.encode(text, addSpecial, true);
    std::vector<int32_t> ids;
    if (addSpecial && tokenizer.addBos() && tokenizer.bos() != tokenizer::kNoToken) ids.push_back(tokenizer.bos());
    // Each piece on its own, special tokens parsed, nothing added (a piece's leading space and
    // the tokenizer's space prefix are as mtmd gets them).
    auto add = [&](std::string_view piece) -> Status {
        if (piece.empty()) return Status::ok();
        HEARTH_ASSIGN_OR_RETURN(std::vector<int32_t> part, tokenizer.encode(piece, false, true));
        ids.insert(ids.end(), part.begin(), part.end());
        return Status::ok();
    };
    size_t next = 0, at = 0; // the next image; the text not yet taken
    for (size_t m = text.find(kImageMarker); m != std::string_view::npos; m = text.find(kImageMarker, at)) {
        if (next == images.size())
            return invalidArgument("the prompt has more image markers than the " + std::to_string(images.size()) +
                                   " images given");
        PromptImage& im = images[next++];
        if (!im.embeddings) return invalidArgument("image " + std::to_string(next) + " has no embeddings");
        HEARTH_RETURN_IF_ERROR(add(text.substr(at, m - at)));
        HEARTH_RETURN_IF_ERROR(add(projector.imageBegin));
        im.at = int32_t(ids.size());
        const std::vector<int32_t> holders = imagePlaceholders(*im.embeddings, nVocab);
        ids.insert(ids.end(), holders.begin(), holders.end());
        HEARTH_RETURN_IF_ERROR(add(projector.imageEnd));
        at = m + kImageMarker.size();
    }
    if (next != images.size())
        return invalidArgument(std::to_string(images.size()) + " images given for " + std::to_string(next) +
                               " image markers in the prompt");
    HEARTH_RETURN_IF_ERROR(add(text.substr(at)));
    if (addSpecial && tokenizer.addEos() && tokenizer.eos() != tokenizer::kNoToken) ids.push_back(tokenizer.eos());
    return ids;
}

} // namespace hearth
