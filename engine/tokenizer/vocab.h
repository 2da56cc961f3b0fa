// The loaded vocabulary shared by all tokenizer parts, and how it is built from raw
// `tokenizer.ggml.*` arrays (read from GGUF, or made by hand in tests).
#pragma once

#include "hearth/status.h"
#include "hearth/tokenizer.h"
#include "tokenizer/flat_hash.h"
#include "tokenizer/pre_tokenizer.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::gguf {
class File;
}

namespace hearth::tokenizer::detail {

// Longest token text accepted; longer ones mean a corrupt or hostile file.
inline constexpr size_t kMaxTokenBytes = 64 * 1024;

struct MergeEntry {
    int32_t rank = 0;
    int32_t result = kNoToken; // token of the joined text, kNoToken if the vocab lacks it
};

// Everything read from the metadata, before validation. `merges` views strings owned by the
// caller (the GGUF file), which must stay alive until buildVocab returns.
struct VocabSource {
    std::string model;
    std::optional<std::string> pre;
    std::vector<std::string> tokens;
    std::optional<std::vector<float>> scores;
    std::optional<std::vector<int32_t>> tokenTypes;
    std::optional<std::span<const std::string>> merges;
    // Special ids as stored (may be negative or out of range; validated when built).
    std::optional<int64_t> bos, eos, eot, eom, unk, sep, pad;
    std::optional<int64_t> fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep;
    std::optional<bool> addBos, addEos, addSpacePrefix;
    std::optional<bool> addSep;                                     // add_sep_token
    std::optional<bool> normalizerLowercase, normalizerStripAccents; // WordPiece only
};

struct Vocab {
    Vocab() = default;
    Vocab(const Vocab&) = delete; // the id map points into `text`
    Vocab& operator=(const Vocab&) = delete;

    ModelType type = ModelType::Spm;
    std::string modelName;
    std::string preName;
    PreTokenizerConfig pre;

    std::vector<std::string> text;
    size_t maxTokenBytes = 0;
    std::vector<float> score;
    std::vector<TokenType> tokenType;
    TokenIndex ids;

    // BPE merges keyed by (left id << 32 | right id).
    U64Map<MergeEntry> merges;
    // SPM: every pair of adjacent symbols found inside some token (see spmPairKey). Text
    // symbols forming a pair not in this set can never be merged together.
    U64Map<uint8_t> spmPairs;
    // Byte-level BPE: token of each byte's stand-in character. Gemma 4 BPE: token "<0xXX>".
    // SPM: token "<0xXX>", else the raw byte.
    std::array<int32_t, 256> byteToken{};

    // Control, user-defined and unknown tokens, longest text first: matched in the input
    // before tokenizing (control and unknown only when parsing special tokens).
    std::vector<int32_t> specialTokens;
    // A byte trie of their texts, for finding every occurrence in one pass.
    struct TrieNode {
        std::vector<std::pair<uint8_t, int32_t>> children; // byte -> node index
        int32_t order = -1; // index into specialTokens of the token ending here
    };
    std::vector<TrieNode> specialTrie; // node 0 is the root

    // Each token's piece with special tokens rendered as their text.
    std::vector<std::string> piece;

    int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken;
    int32_t unk = kNoToken, sep = kNoToken, pad = kNoToken;
    int32_t fimPre = kNoToken, fimSuf = kNoToken, fimMid = kNoToken;
    int32_t fimPad = kNoToken, fimRep = kNoToken, fimSep = kNoToken;
    bool addBos = false;
    bool addEos = false;
    bool addSpacePrefix = false;
    bool addSep = false; // WordPiece: [SEP] ends an encoding with special tokens
    // WordPiece normalizer: lowercase, and reduce characters to their first NFD codepoint
    // dropping marks.
    bool wpmLowercase = true;
    bool wpmStripAccents = true;
    std::vector<int32_t> eog; // ascending

    std::vector<std::string> warnings;

    int32_t size() const { return static_cast<int32_t>(text.size()); }
    bool valid(int32_t id) const { return id >= 0 && id < size(); }
    int32_t find(std::string_view s) const { return ids.find(s); }
    static uint64_t mergeKey(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
               static_cast<uint32_t>(right);
    }
};

// A 64-bit summary of two adjacent SPM symbols (each at most 4 bytes). Different pairs may
// share a key; that only makes the "can never merge" test more cautious.
inline uint64_t spmPairKey(std::string_view a, std::string_view b) {
    uint64_t key = (a.size() << 4) | b.size();
    for (char c : a) key = key * 0x100000001B3ull ^ static_cast<uint8_t>(c);
    key = mix64(key);
    for (char c : b) key = key * 0x100000001B3ull ^ static_cast<uint8_t>(c);
    key = mix64(key);
    return key == U64Map<uint8_t>::kEmptyKey ? 0 : key;
}

// Reads the tokenizer keys of a GGUF file. Errors on missing tokens/model and mistyped keys.
Result<VocabSource> readVocabSource(const gguf::File& file);

// Validates and indexes a source. Errors on anything a tokenizer cannot safely use.
Result<std::shared_ptr<const Vocab>> buildVocab(VocabSource source);

} // namespace hearth::tokenizer::detail
