// Images in API requests: base64 and data URIs to the encoded bytes the engine decodes
// (image_parts.cpp), and a chat's images to the prompt and embeddings to submit (chat_images.cpp).
#pragma once

#include "hearth/engine.h"
#include "server/api_error.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

// At most this many images in one request (each is hundreds of prompt tokens).
inline constexpr size_t kMaxImagesPerRequest = 16;

// Standard base64 (the padding optional) to bytes; nullopt when the text is not base64.
std::optional<std::string> decodeBase64(std::string_view text);

// An OpenAI image_url's url to the image's bytes: a data URI ("data:image/png;base64,...").
// http(s) URLs are refused, as this server does not fetch them; errors name `param`.
std::optional<ApiError> readImageUrl(std::string_view url, const std::string& param, std::string& bytes);

// A chat with images (their encoded bytes, in the order of the markers in its messages) to the
// ids to submit and the images' embeddings: each image decoded and encoded by the engine's
// projector, the rendered chat tokenized around them. 400 when the model takes no images or has
// no projector loaded, or an image does not decode (naming it); errors name `param`.
ApiResult<std::vector<int32_t>> encodeChatWithImages(Engine& engine, const tmpl::ChatRequest& chat,
                                                     const std::vector<std::string>& encoded,
                                                     std::vector<PromptImage>& images,
                                                     const std::string& param = "messages");

// A raw prompt with image markers (no chat template) to its ids: the images decoded and encoded
// by the projector, the text tokenized around them (encodeWithImages). Errors name `param`.
ApiResult<std::vector<int32_t>> encodeTextWithImages(Engine& engine, std::string_view text, bool addSpecial,
                                                     const std::vector<std::string>& encoded,
                                                     std::vector<PromptImage>& images, const std::string& param);

// A chat's prompt ids whatever it holds: with images, encodeChatWithImages; without,
// Engine::encodeChat with a template's refusal as a 400 naming `param`.
ApiResult<std::vector<int32_t>> chatPrompt(Engine& engine, const tmpl::ChatRequest& chat,
                                           const std::vector<std::string>& encoded, std::vector<PromptImage>& images,
                                           const std::string& param = "messages");

} // namespace hearth::server
