// Codepoint class lookup and UTF-8 decoding, encoding, validation and sanitizing.
#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <memory>

namespace hearth::tokenizer {

namespace {

// Codepoints below this use a flat table built once from the runs; the rest use a binary search.
constexpr uint32_t kFlatLimit = 0x30000;

const uint8_t* flatTable() {
    static const std::unique_ptr<uint8_t[]> table = [] {
        auto t = std::make_unique<uint8_t[]>(kFlatLimit);
        for (size_t i = 0; i < detail::kCodepointRunCount; ++i) {
            const uint32_t begin = detail::kCodepointRuns[i].start;
            if (begin >= kFlatLimit) break;
            const uint32_t end = i + 1 < detail::kCodepointRunCount
                                     ? std::min(detail::kCodepointRuns[i + 1].start, kFlatLimit)
                                     : kFlatLimit;
            std::fill(t.get() + begin, t.get() + end, detail::kCodepointRuns[i].info);
        }
        return t;
    }();
    return table.get();
}

uint8_t searchRuns(uint32_t cp) {
    const detail::CodepointRun* begin = detail::kCodepointRuns;
    const detail::CodepointRun* end = begin + detail::kCodepointRunCount;
    const auto* it = std::upper_bound(begin, end, cp, [](uint32_t value, const auto& run) {
        return value < run.start;
    });
    return it == begin ? 0 : (it - 1)->info;
}

enum class SeqStatus { Valid, Incomplete, Invalid };

// Checks the UTF-8 sequence starting at text[pos] under the strict rules. `len` receives the
// sequence length (Valid), the bytes present (Incomplete), or the maximal invalid subpart
// (Invalid, at least 1).
SeqStatus checkSequence(std::string_view text, size_t pos, size_t& len) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
    const uint8_t lead = byte(pos);
    if (lead < 0x80) {
        len = 1;
        return SeqStatus::Valid;
    }
    size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF; // allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
        need = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 3;
        if (lead == 0xE0) lo = 0xA0;
        if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 4;
        if (lead == 0xF0) lo = 0x90;
        if (lead == 0xF4) hi = 0x8F;
    } else {
        len = 1;
        return SeqStatus::Invalid;
    }
    for (size_t k = 1; k < need; ++k) {
        if (pos + k >= text.size()) {
            len = k;
            return SeqStatus::Incomplete;
        }
        const uint8_t b = byte(pos + k);
        const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
        if (!ok) {
            len = k;
            return SeqStatus::Invalid;
        }
    }
    len = need;
    return SeqStatus::Valid;
}

} // namespace

uint8_t codepointInfo(uint32_t cp) {
    if (cp < kFlatLimit) return flatTable()[cp];
    if (cp > 0x10FFFF) return 0;
    return searchRuns(cp);
}

uint32_t decodeUtf8At(std::string_view text, size_t& pos) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
    const auto cont = [&](size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
    const uint8_t b0 = byte(pos);
    if (b0 < 0x80) {
        pos += 1;
        return b0;
    }
    if ((b0 & 0xE0) == 0xC0) {
        if (!cont(pos + 1)) { ++pos; return kReplacementChar; }
        const uint32_t cp = (uint32_t(b0 & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
        pos += 2;
        return cp;
    }
    if ((b0 & 0xF0) == 0xE0) {
        if (!cont(pos + 1) || !cont(pos + 2)) { ++pos; return kReplacementChar; }
        const uint32_t cp = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(byte(pos + 1) & 0x3F) << 6) |
                            (byte(pos + 2) & 0x3F);
        pos += 3;
        return cp;
    }
    if ((b0 & 0xF8) == 0xF0) {
        if (!cont(pos + 1) || !cont(pos + 2) || !cont(pos + 3)) { ++pos; return kReplacementChar; }
        const uint32_t cp = (uint32_t(b0 & 0x07) << 18) | (uint32_t(byte(pos + 1) & 0x3F) << 12) |
                            (uint32_t(byte(pos + 2) & 0x3F) << 6) | (byte(pos + 3) & 0x3F);
        pos += 4;
        return cp <= 0x10FFFF ? cp : kReplacementChar;
    }
    ++pos; // a continuation byte or 0xF8..0xFF where a lead byte should be
    return kReplacementChar;
}

std::vector<uint32_t> decodeUtf8(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) out.push_back(decodeUtf8At(text, pos));
    return out;
}

void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool isValidUtf8(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        if (checkSequence(text, pos, len) != SeqStatus::Valid) return false;
        pos += len;
    }
    return true;
}

size_t incompleteUtf8Tail(std::string_view text) {
    for (size_t k = 1; k <= 3 && k <= text.size(); ++k) {
        const size_t pos = text.size() - k;
        const auto b = static_cast<uint8_t>(text[pos]);
        if ((b & 0xC0) == 0x80) continue; // continuation: look further back for the lead
        size_t len = 0;
        return checkSequence(text, pos, len) == SeqStatus::Incomplete ? k : 0;
    }
    return 0;
}

void appendSanitizedUtf8(std::string& out, std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        const SeqStatus status = checkSequence(text, pos, len);
        if (status == SeqStatus::Valid) {
            out.append(text.substr(pos, len));
        } else {
            appendUtf8(out, kReplacementChar);
        }
        pos += len;
    }
}

} // namespace hearth::tokenizer
