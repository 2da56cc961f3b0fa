// Request checks that keep a local server private: API keys compared in constant time, Host
// headers checked against DNS rebinding, and CORS origins matched against an allow-list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

// Equal strings, in time that depends only on their lengths.
bool constantTimeEquals(std::string_view a, std::string_view b);

// The key a request presents: "Authorization: Bearer K" (scheme case-insensitive) or
// "x-api-key: K". Empty when neither is there.
std::string presentedApiKey(std::string_view authorization, std::string_view xApiKey);

// True for addresses that only this machine reaches: 127.0.0.0/8, ::1, "localhost".
bool isLoopbackBind(std::string_view host);

// For a loopback-bound server: the Host header names this machine (localhost, 127.0.0.1,
// [::1], optionally with a port). An absent Host header (HTTP/1.0) is allowed.
bool hostHeaderAllowed(std::string_view hostHeader);

// Whether `origin` is in the allow-list ("*" allows any origin).
bool originAllowed(std::string_view origin, const std::vector<std::string>& allowed);

} // namespace hearth::server
