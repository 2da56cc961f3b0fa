// Pre-tokenizer name table and the word-splitting rules of each family, written as small
// matchers over codepoint classes.
//
// Each family is a list of steps. A step looks for matches in every word the previous step
// produced (the first step sees the whole text as one word): matches become words, and the
// unmatched stretches between them become words too. Inside a step, matching follows regex
// search semantics: leftmost match, alternatives tried in order, greedy repetition with
// backtracking where the pattern needs it. Lookahead such as (?!\S) sees the end of the word
// being split as the end of the text.
#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <cstddef>

namespace hearth::tokenizer {

namespace {

struct NameEntry {
    std::string_view name;
    PreTokenizerKind kind;
    bool cleanSpaces;
    bool ignoreMerges;
    bool forceAddBos;
};

using K = PreTokenizerKind;

// The `tokenizer.ggml.pre` names we know, the family each uses, and the decode/encode flags
// that go with them.
constexpr NameEntry kNames[] = {
    {"default", K::Default, true, false, false},
    // Llama 3 style
    {"llama3", K::Llama3, true, true, true},
    {"llama-v3", K::Llama3, true, true, true},
    {"llama-bpe", K::Llama3, true, true, true},
    {"falcon3", K::Llama3, true, true, true},
    {"falcon-h1", K::Llama3, true, true, true},
    {"pixtral", K::Llama3, true, true, true},
    {"midm-2.0", K::Llama3, true, true, true},
    {"lfm2", K::Llama3, true, true, true},
    {"dbrx", K::Llama3, true, false, false},
    {"smaug-bpe", K::Llama3, true, false, false},
    // Qwen 2 style
    {"qwen2", K::Qwen2, false, false, false},
    {"deepseek-r1-qwen", K::Qwen2, false, false, false},
    {"stablelm2", K::Qwen2, true, false, false},
    {"megrez", K::Qwen2, true, false, false},
    {"hunyuan", K::Qwen2, false, false, false},
    {"grok-2", K::Qwen2, false, false, false},
    {"qwen35", K::Qwen35, false, false, false},
    // DeepSeek
    {"deepseek-llm", K::DeepseekLlm, false, false, false},
    {"deepseek-coder", K::DeepseekCoder, false, false, false},
    // Falcon
    {"falcon", K::Falcon, true, false, false},
    // StarCoder style
    {"starcoder", K::Starcoder, true, false, false},
    {"refact", K::Starcoder, true, false, false},
    {"command-r", K::Starcoder, false, false, false},
    {"smollm", K::Starcoder, false, false, false},
    {"codeshell", K::Starcoder, true, false, false},
    {"exaone", K::Starcoder, true, false, false},
    {"minerva-7b", K::Starcoder, true, false, false},
    // GPT-2 style
    {"gpt-2", K::Gpt2, true, false, false},
    {"gpt2", K::Gpt2, true, false, false},
    {"phi-2", K::Gpt2, true, false, false},
    {"mpt", K::Gpt2, true, false, false},
    {"olmo", K::Gpt2, true, false, false},
    {"jais", K::Gpt2, true, false, false},
    {"exaone4", K::Gpt2, true, false, false},
    {"roberta-bpe", K::Gpt2, true, false, false},
    {"jina-es", K::Gpt2, true, false, false},
    {"jina-de", K::Gpt2, true, false, false},
    {"jina-v1-en", K::Gpt2, true, false, false},
    {"jina-v2-es", K::Gpt2, true, false, false},
    {"jina-v2-de", K::Gpt2, true, false, false},
    {"jina-v2-code", K::Gpt2, true, false, false},
    {"gigachat", K::Gpt2, true, false, false},
    {"trillion", K::Gpt2, false, false, false},
    {"granite-docling", K::Gpt2, false, false, false},
    // GPT-4o (o200k) style
    // gpt-oss (o200k_harmony) vocabularies are converted with "gpt-4o".
    {"gpt-4o", K::Gpt4o, false, false, false},
    {"llama4", K::Gpt4o, false, false, false},
    {"kanana2", K::Gpt4o, false, false, false},
    {"talkie", K::Gpt4o, false, false, false},
    {"minimax-m2", K::Gpt4o, false, false, false},
    {"tekken", K::Tekken, false, true, true},
    // SentencePiece-shaped BPE. tokenizer.ggml.model = "gemma4" selects "gemma4" whatever the
    // file's pre name.
    {"gemma4", K::Gemma4, true, false, false},
    {"granite-embed-multi-311m", K::Gemma4, true, false, false},
};

constexpr size_t kNoMatch = static_cast<size_t>(-1);

// A word being split: codepoints [b, e) with their class bytes. Reads past e see "end".
struct Word {
    const uint32_t* cp;
    const uint8_t* info;
    size_t b;
    size_t e;

    static constexpr uint32_t kEnd = 0xFFFFFFFF;
    uint32_t at(size_t i) const { return i < e ? cp[i] : kEnd; }
    bool letter(size_t i) const { return i < e && isLetterInfo(info[i]); }
    bool number(size_t i) const { return i < e && isNumberInfo(info[i]); }
    bool space(size_t i) const { return i < e && isWhitespaceInfo(info[i]); }
    bool punct(size_t i) const { return i < e && isPunctuationInfo(info[i]); }
    // [^\s\p{L}\p{N}]
    bool other(size_t i) const {
        return i < e && !isWhitespaceInfo(info[i]) && !isLetterInfo(info[i]) &&
               !isNumberInfo(info[i]);
    }
    bool newline(size_t i) const { return at(i) == '\r' || at(i) == '\n'; }

    template <typename Pred> size_t runEnd(size_t i, Pred pred) const {
        while (pred(i)) ++i;
        return i;
    }
};

uint32_t asciiLower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// 's 't 're 've 'm 'll 'd at p; returns the length matched or 0. Case-insensitive matching
// folds ASCII only, which is exact here (no other codepoint lowercases to these letters).
size_t contraction(const Word& w, size_t p, bool caseInsensitive) {
    if (w.at(p) != '\'' || p + 1 >= w.e) return 0;
    const auto fold = [&](uint32_t c) { return caseInsensitive ? asciiLower(c) : c; };
    const uint32_t c1 = fold(w.at(p + 1));
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (p + 2 >= w.e) return 0;
    const uint32_t c2 = fold(w.at(p + 2));
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
}

// Whitespace alternatives shared by the Llama 3 family: \s*[\r\n]+ | \s+(?!\S) | \s+
// (withNewlines) or just \s+(?!\S) | \s+ (GPT-2).
size_t whitespaceRun(const Word& w, size_t p, bool withNewlines) {
    size_t end = p;
    size_t afterLastNewline = 0;
    while (w.space(end)) {
        if (w.newline(end)) afterLastNewline = end + 1;
        ++end;
    }
    if (end == p) return kNoMatch;
    if (withNewlines && afterLastNewline != 0) return afterLastNewline;
    // \s+(?!\S): the whole run at the end of the word, else all but the last whitespace.
    if (end - p > 1 && end < w.e) return end - 1;
    return end;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t matchGpt2(const Word& w, size_t p) {
    if (size_t n = contraction(w, p, false)) return p + n;
    const size_t q = w.at(p) == ' ' ? p + 1 : p;
    if (w.letter(q)) return w.runEnd(q, [&](size_t i) { return w.letter(i); });
    if (w.number(q)) return w.runEnd(q, [&](size_t i) { return w.number(i); });
    if (w.other(q)) return w.runEnd(q, [&](size_t i) { return w.other(i); });
    return whitespaceRun(w, p, false);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// With `marks`, \p{M} joins \p{L} in the letter run and leaves the punctuation run (Qwen 3.5).
size_t matchLlama3Like(const Word& w, size_t p, size_t maxDigits, bool marks) {
    if (size_t n = contraction(w, p, true)) return p + n;
    const auto letterish = [&](size_t i) {
        return w.letter(i) || (marks && i < w.e && classOf(w.info[i]) == CharClass::Mark);
    };
    if (!w.newline(p) && !w.number(p) && (letterish(p) || letterish(p + 1))) {
        return w.runEnd(p + 1, letterish);
    }
    if (w.number(p)) {
        size_t end = p;
        while (end - p < maxDigits && w.number(end)) ++end;
        return end;
    }
    const auto otherish = [&](size_t i) { return w.other(i) && !letterish(i); };
    const size_t q = (w.at(p) == ' ' && otherish(p + 1)) ? p + 1 : p;
    if (otherish(q)) {
        const size_t end = w.runEnd(q, otherish);
        return w.runEnd(end, [&](size_t i) { return w.newline(i); });
    }
    return whitespaceRun(w, p, true);
}

size_t matchLlama3(const Word& w, size_t p) { return matchLlama3Like(w, p, 3, false); }
size_t matchQwen2(const Word& w, size_t p) { return matchLlama3Like(w, p, 1, false); }
size_t matchQwen35(const Word& w, size_t p) { return matchLlama3Like(w, p, 1, true); }

// The o200k pattern as the reference runs it (ASCII case classes over Unicode letters):
//   [^\r\n\p{L}\p{N}]?U*W+C? | [^\r\n\p{L}\p{N}]?U+W*C? | \p{N}{1,3} |
//    ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// where U is a letter other than a-z, W a letter other than A-Z (so letters outside ASCII are
// both) and C a case-insensitive contraction. Tekken is the same without C and with \p{N}.
size_t matchCaseShaped(const Word& w, size_t p, bool contractions, size_t maxDigits) {
    const auto upperish = [&](size_t i) {
        return w.letter(i) && !(w.at(i) >= 'a' && w.at(i) <= 'z');
    };
    const auto lowerish = [&](size_t i) {
        return w.letter(i) && !(w.at(i) >= 'A' && w.at(i) <= 'Z');
    };
    const auto withContraction = [&](size_t end) {
        return contractions ? end + contraction(w, end, true) : end;
    };
    // U*W+ starting at q: U* backs off from its longest run until W+ can start.
    const auto upperThenLower = [&](size_t q) -> size_t {
        const size_t uEnd = w.runEnd(q, upperish);
        for (size_t k = uEnd + 1; k-- > q;) {
            if (lowerish(k)) return withContraction(w.runEnd(k, lowerish));
        }
        return kNoMatch;
    };
    const bool prefix = p < w.e && !w.newline(p) && !w.letter(p) && !w.number(p);
    if (prefix) {
        if (size_t end = upperThenLower(p + 1); end != kNoMatch) return end;
    }
    if (size_t end = upperThenLower(p); end != kNoMatch) return end;
    if (prefix && upperish(p + 1)) {
        return withContraction(w.runEnd(w.runEnd(p + 1, upperish), lowerish));
    }
    if (upperish(p)) return withContraction(w.runEnd(w.runEnd(p, upperish), lowerish));
    if (w.number(p)) {
        size_t end = p;
        while (end - p < maxDigits && w.number(end)) ++end;
        return end;
    }
    const size_t q = (w.at(p) == ' ' && w.other(p + 1)) ? p + 1 : p;
    if (w.other(q)) {
        const size_t end = w.runEnd(q, [&](size_t i) { return w.other(i); });
        return w.runEnd(end, [&](size_t i) { return w.newline(i) || w.at(i) == '/'; });
    }
    return whitespaceRun(w, p, true);
}

size_t matchGpt4o(const Word& w, size_t p) { return matchCaseShaped(w, p, true, 3); }
size_t matchTekken(const Word& w, size_t p) { return matchCaseShaped(w, p, false, 1); }

// [^\n]+|[\n]+ : a run of newlines, or a run of anything else.
size_t matchNewlineOrOtherRun(const Word& w, size_t p) {
    const bool newline = w.at(p) == '\n';
    return w.runEnd(p, [&](size_t i) { return i < w.e && (w.at(i) == '\n') == newline; });
}

// [\p{P}\$\+<=>\^~\|]+ (Default) and [\p{P}\$\+<=>\^~\|`]+ (Falcon)
bool isPunctuationRunChar(const Word& w, size_t i, bool backtick) {
    if (w.punct(i)) return true;
    const uint32_t c = w.at(i);
    return c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
           c == '|' || (backtick && c == '`');
}

size_t matchPunctuationRun(const Word& w, size_t p) {
    const auto pred = [&](size_t i) { return isPunctuationRunChar(w, i, false); };
    return pred(p) ? w.runEnd(p, pred) : kNoMatch;
}

size_t matchFalconPunctuationRun(const Word& w, size_t p) {
    const auto pred = [&](size_t i) { return isPunctuationRunChar(w, i, true); };
    return pred(p) ? w.runEnd(p, pred) : kNoMatch;
}

// \p{N}+
size_t matchNumberRun(const Word& w, size_t p) {
    return w.number(p) ? w.runEnd(p, [&](size_t i) { return w.number(i); }) : kNoMatch;
}

// \p{N}
size_t matchOneNumber(const Word& w, size_t p) { return w.number(p) ? p + 1 : kNoMatch; }

// [0-9][0-9][0-9]
size_t matchAsciiDigitTriple(const Word& w, size_t p) {
    const auto digit = [&](size_t i) { return w.at(i) >= '0' && w.at(i) <= '9'; };
    return digit(p) && digit(p + 1) && digit(p + 2) ? p + 3 : kNoMatch;
}

// [\r\n]
size_t matchOneNewline(const Word& w, size_t p) { return w.newline(p) ? p + 1 : kNoMatch; }

// \s?X+ for a class X that never contains whitespace.
template <typename Pred> size_t optionalSpaceThenRun(const Word& w, size_t p, Pred pred) {
    if (w.space(p) && pred(p + 1)) return w.runEnd(p + 1, pred);
    return pred(p) ? w.runEnd(p, pred) : kNoMatch;
}

// \s?\p{L}+
size_t matchSpaceLetters(const Word& w, size_t p) {
    return optionalSpaceThenRun(w, p, [&](size_t i) { return w.letter(i); });
}

// \s?\p{P}+
size_t matchSpacePunctuation(const Word& w, size_t p) {
    return optionalSpaceThenRun(w, p, [&](size_t i) { return w.punct(i); });
}

struct Range32 {
    uint32_t lo;
    uint32_t hi;
};

bool inRanges(const Range32* begin, const Range32* end, uint32_t c) {
    const Range32* it =
        std::upper_bound(begin, end, c, [](uint32_t v, const Range32& r) { return v < r.lo; });
    return it != begin && c <= (it - 1)->hi;
}

// The cased-letter class of DeepSeek LLM's letter pattern, as codepoint ranges.
constexpr Range32 kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},
    {0xD8, 0xF6},       {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},
    {0x295, 0x2AF},     {0x370, 0x373},     {0x376, 0x377},     {0x37B, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},
    {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

// ASCII punctuation and symbols plus full-width forms, curly quotes and the CJK comma and
// full stop. (U+3000 is in the source pattern too, but as whitespace it never matches.)
constexpr Range32 kDeepseekPunctuation[] = {
    {0x21, 0x2F},     {0x3A, 0x7E},     {0x2018, 0x201F},
    {0x3001, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
};

// CJK ideographs, everything from U+0800 up to them, and Hangul syllables; whitespace in
// those ranges does not match.
constexpr Range32 kCjkRanges[] = {{0x0800, 0x9FA5}, {0xAC00, 0xD7FF}};

template <size_t N> bool inTable(const Range32 (&table)[N], uint32_t c) {
    return inRanges(table, table + N, c);
}

// \s?[cased letters]+
size_t matchDeepseekLetters(const Word& w, size_t p) {
    return optionalSpaceThenRun(w, p, [&](size_t i) {
        return i < w.e && inTable(kDeepseekLetters, w.cp[i]);
    });
}

// \s?[!-/:-~ full-width punctuation, quotes, 、。]+
size_t matchDeepseekPunctuation(const Word& w, size_t p) {
    return optionalSpaceThenRun(w, p, [&](size_t i) {
        return i < w.e && inTable(kDeepseekPunctuation, w.cp[i]);
    });
}

// [一-龥ࠀ-一가-퟿]+
size_t matchCjkRun(const Word& w, size_t p) {
    const auto pred = [&](size_t i) {
        return i < w.e && !w.space(i) && inTable(kCjkRanges, w.cp[i]);
    };
    return pred(p) ? w.runEnd(p, pred) : kNoMatch;
}

using MatchFn = size_t (*)(const Word&, size_t);

// One split step: either a matcher tried at each position (leftmost search), or the special
// \s+$ step, whose only possible match is the word's trailing whitespace.
struct Step {
    MatchFn match = nullptr; // nullptr: trailing whitespace
};

void emit(std::vector<CodepointRange>& out, size_t b, size_t e) {
    if (e > b) out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
}

void applyStep(const Step& step, const Word& word, std::vector<CodepointRange>& out) {
    if (step.match == nullptr) {
        size_t s = word.e;
        while (s > word.b && isWhitespaceInfo(word.info[s - 1])) --s;
        emit(out, word.b, s);
        emit(out, s, word.e);
        return;
    }
    size_t gapStart = word.b;
    size_t p = word.b;
    while (p < word.e) {
        const size_t end = step.match(word, p);
        if (end == kNoMatch || end <= p) {
            ++p;
            continue;
        }
        emit(out, gapStart, p);
        emit(out, p, end);
        p = end;
        gapStart = end;
    }
    emit(out, gapStart, word.e);
}

struct StepList {
    std::array<Step, 6> steps{};
    size_t count = 0;
};

StepList stepsFor(PreTokenizerKind kind) {
    switch (kind) {
    case K::Default:
        return {{Step{matchPunctuationRun}, Step{matchGpt2}, Step{matchNumberRun},
                 Step{matchAsciiDigitTriple}},
                4};
    case K::Gpt2: return {{Step{matchGpt2}}, 1};
    case K::Llama3: return {{Step{matchLlama3}}, 1};
    case K::Qwen2: return {{Step{matchQwen2}}, 1};
    case K::Qwen35: return {{Step{matchQwen35}}, 1};
    case K::DeepseekLlm:
        return {{Step{matchOneNewline}, Step{matchDeepseekLetters}, Step{matchDeepseekPunctuation},
                 Step{nullptr}, Step{matchCjkRun}, Step{matchNumberRun}},
                6};
    case K::DeepseekCoder:
        return {{Step{matchOneNewline}, Step{matchSpaceLetters}, Step{matchSpacePunctuation},
                 Step{matchCjkRun}, Step{matchOneNumber}},
                5};
    case K::Falcon:
        return {{Step{matchFalconPunctuationRun}, Step{matchGpt2}, Step{matchAsciiDigitTriple}},
                3};
    case K::Starcoder: return {{Step{matchOneNumber}, Step{matchGpt2}}, 2};
    case K::Gpt4o: return {{Step{matchGpt4o}}, 1};
    case K::Tekken: return {{Step{matchTekken}}, 1};
    case K::Gemma4: return {{Step{matchNewlineOrOtherRun}}, 1};
    }
    return {{Step{matchGpt2}}, 1};
}

} // namespace

PreTokenizerConfig preTokenizerConfig(std::string_view name) {
    if (name.empty()) return PreTokenizerConfig{};
    for (const NameEntry& entry : kNames) {
        if (entry.name == name) {
            PreTokenizerConfig config{entry.kind, true, entry.cleanSpaces, entry.ignoreMerges,
                                      entry.forceAddBos};
            if (entry.kind == K::Gemma4) {
                config.byteLevel = false;
                config.escapeSpaces = true;
                config.alwaysAddBos = true;
            }
            return config;
        }
    }
    PreTokenizerConfig config;
    config.known = false;
    return config;
}

std::string_view preTokenizerKindName(PreTokenizerKind kind) {
    switch (kind) {
    case K::Default: return "default";
    case K::Gpt2: return "gpt-2";
    case K::Llama3: return "llama3";
    case K::Qwen2: return "qwen2";
    case K::Qwen35: return "qwen35";
    case K::DeepseekLlm: return "deepseek-llm";
    case K::DeepseekCoder: return "deepseek-coder";
    case K::Falcon: return "falcon";
    case K::Starcoder: return "starcoder";
    case K::Gpt4o: return "gpt-4o";
    case K::Tekken: return "tekken";
    case K::Gemma4: return "gemma4";
    }
    return "default";
}

void preTokenize(PreTokenizerKind kind, std::span<const uint32_t> cps,
                 std::span<const uint8_t> info, std::vector<CodepointRange>& words) {
    words.clear();
    if (cps.empty()) return;
    const StepList list = stepsFor(kind);
    std::vector<CodepointRange> current{{0, static_cast<uint32_t>(cps.size())}};
    // Two buffers: `current` holds the words so far, `words` receives the next step's output.
    for (size_t s = 0; s < list.count; ++s) {
        words.clear();
        for (const CodepointRange& r : current) {
            applyStep(list.steps[s], Word{cps.data(), info.data(), r.begin, r.end}, words);
        }
        if (s + 1 < list.count) current.swap(words);
    }
}

} // namespace hearth::tokenizer
