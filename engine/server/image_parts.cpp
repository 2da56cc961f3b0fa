// Base64 and data URIs of images in API requests (OpenAI image_url parts; Ollama and Anthropic
// send plain base64).
#include "server/image_parts.h"

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

} // namespace hearth::server
