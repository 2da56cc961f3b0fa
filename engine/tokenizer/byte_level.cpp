// Tables for the GPT-2 byte-level alphabet, built once.
#include "tokenizer/byte_level.h"

#include "tokenizer/unicode.h"

#include <array>

namespace hearth::tokenizer {

namespace {

bool standsForItself(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
    std::array<uint32_t, 256> codepoint{};
    std::array<std::string, 256> utf8;
    std::array<int16_t, 512> byteOf{}; // stand-ins all lie below U+0200

    Tables() {
        byteOf.fill(-1);
        uint32_t next = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            codepoint[b] = standsForItself(b) ? b : next++;
            appendUtf8(utf8[b], codepoint[b]);
            byteOf[codepoint[b]] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

} // namespace

uint32_t byteToCodepoint(uint8_t byte) { return tables().codepoint[byte]; }

std::string_view byteToUtf8(uint8_t byte) { return tables().utf8[byte]; }

int codepointToByte(uint32_t cp) { return cp < 512 ? tables().byteOf[cp] : -1; }

void appendByteLevel(std::string& out, std::string_view bytes) {
    const Tables& t = tables();
    for (char c : bytes) out.append(t.utf8[static_cast<uint8_t>(c)]);
}

} // namespace hearth::tokenizer
