// API-key comparison, Host-header checks against DNS rebinding, and CORS origin matching.
#include "server/security.h"

#include <cctype>

namespace hearth::server {

namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::string_view trimBlanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool allDigits(std::string_view s) {
    if (s.empty() || s.size() > 5) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

} // namespace

bool constantTimeEquals(std::string_view a, std::string_view b) {
    // Compare over the longer length so the time does not reveal a matching prefix.
    const size_t n = a.size() > b.size() ? a.size() : b.size();
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned char>(x ^ y);
    }
    volatile unsigned char result = diff;
    return result == 0;
}

std::string presentedApiKey(std::string_view authorization, std::string_view xApiKey) {
    std::string_view auth = trimBlanks(authorization);
    if (auth.size() > 7 && equalsIgnoreCase(auth.substr(0, 7), "bearer "))
        return std::string(trimBlanks(auth.substr(7)));
    return std::string(trimBlanks(xApiKey));
}

bool isLoopbackBind(std::string_view host) {
    if (host == "localhost" || host == "::1" || host == "[::1]") return true;
    return host.size() >= 4 && host.substr(0, 4) == "127.";
}

bool hostHeaderAllowed(std::string_view hostHeader) {
    std::string_view h = trimBlanks(hostHeader);
    if (h.empty()) return true;
    std::string_view name = h;
    if (h.front() == '[') {
        const size_t close = h.find(']');
        if (close == std::string_view::npos) return false;
        name = h.substr(0, close + 1);
        std::string_view rest = h.substr(close + 1);
        if (!rest.empty() && !(rest.front() == ':' && allDigits(rest.substr(1)))) return false;
    } else if (const size_t colon = h.rfind(':'); colon != std::string_view::npos) {
        if (!allDigits(h.substr(colon + 1))) return false;
        name = h.substr(0, colon);
    }
    return equalsIgnoreCase(name, "localhost") || name == "127.0.0.1" || name == "[::1]";
}

bool originAllowed(std::string_view origin, const std::vector<std::string>& allowed) {
    if (origin.empty()) return false;
    for (const std::string& a : allowed)
        if (a == "*" || a == origin) return true;
    return false;
}

} // namespace hearth::server
