// WordPiece tokenization as llama.cpp does it for `bert` vocabularies: normalize and split into
// words, then cut each word greedily into the longest tokens from the left.
#include "tokenizer/wpm.h"

#include "tokenizer/unicode.h"

#include <algorithm>

namespace hearth::tokenizer::detail {

namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81"; // U+2581

// The CJK ideograph blocks BERT makes single-character words of (the ranges of Hugging Face's
// BasicTokenizer, including its 0x2B920 start for Extension E/F, which llama.cpp follows).
bool isCjkIdeograph(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// The entry of a table sorted by `first` whose range may hold cp, or nullptr.
template <typename Entry> const Entry* findRange(const Entry* table, size_t count, uint32_t cp) {
    const Entry* end = table + count;
    const Entry* it = std::upper_bound(
        table, end, cp, [](uint32_t value, const Entry& e) { return value < e.first; });
    if (it == table) return nullptr;
    --it;
    return cp <= it->last ? it : nullptr;
}

} // namespace

uint32_t simpleLowercase(uint32_t cp) {
    const LowercaseRun* run = findRange(kLowercaseRuns, kLowercaseRunsCount, cp);
    if (!run || (cp - run->first) % run->step != 0) return cp;
    return static_cast<uint32_t>(static_cast<int64_t>(cp) + run->delta);
}

uint32_t firstOfNfd(uint32_t cp) {
    const NfdRange* range = findRange(kFirstOfNfdRanges, kFirstOfNfdRangesCount, cp);
    return range ? range->to : cp;
}

void splitWpmWords(std::string_view text, const WpmNormalizer& normalizer,
                   std::vector<std::string>& words) {
    std::string word;
    const auto finishWord = [&] {
        if (!word.empty()) words.push_back(std::move(word));
        word.clear();
    };
    size_t pos = 0;
    while (pos < text.size()) {
        uint32_t cp = decodeUtf8At(text, pos);
        if (normalizer.stripAccents) cp = firstOfNfd(cp);
        const uint8_t info = codepointInfo(cp);
        if (isWhitespaceInfo(info)) {
            finishWord();
            continue;
        }
        const CharClass cls = classOf(info);
        if (cp == 0 || cp == kReplacementChar || cls == CharClass::Control) continue;
        if (normalizer.stripAccents && cls == CharClass::Mark) continue;
        const uint32_t out = normalizer.lowercase ? simpleLowercase(cp) : cp;
        if (cls == CharClass::Punctuation || (cp < 0x7F && cls == CharClass::Symbol) ||
            isCjkIdeograph(cp)) {
            finishWord();
            appendUtf8(word, out);
            finishWord();
        } else {
            appendUtf8(word, out);
        }
    }
    finishWord();
}

void encodeWpm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    const WpmNormalizer normalizer{vocab.wpmLowercase, vocab.wpmStripAccents};
    std::vector<std::string> words;
    splitWpmWords(text, normalizer, words);

    std::string word;
    for (const std::string& w : words) {
        word.assign(kWordStart).append(w);
        const std::string_view s = word;
        const size_t wordStart = out.size();
        size_t i = 0;
        while (i < s.size()) {
            // Longest first: no token is longer than maxTokenBytes.
            int32_t id = kNoToken;
            size_t len = std::min(s.size() - i, vocab.maxTokenBytes);
            for (; len > 0; --len) {
                id = vocab.find(s.substr(i, len));
                if (id != kNoToken) break;
            }
            if (id == kNoToken) break;
            out.push_back(id);
            i += len;
        }
        if (i < s.size()) {
            // Some part of the word is no token: the whole word is unknown.
            out.resize(wordStart);
            out.push_back(vocab.unk);
        }
    }
}

} // namespace hearth::tokenizer::detail
