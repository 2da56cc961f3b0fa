// Turning tokens back into text: single pieces, whole sequences (with llama.cpp's leading-space
// and clean-up rules), and the streaming decoder that only ever releases whole characters.
#include "hearth/tokenizer.h"

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace hearth::tokenizer {

namespace {

bool hiddenUnlessRendered(TokenType t) {
    return t == TokenType::Control || t == TokenType::Unknown;
}

Status outOfVocab(int32_t id, int32_t size) {
    return invalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (" +
                           std::to_string(size) + " tokens)");
}

// clean_up_tokenization_spaces, in the three passes llama.cpp applies, each over the previous
// pass's output.
std::string cleanSpaces(const std::string& in) {
    // 1. No space before ? ! . ,
    std::string a;
    a.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        const char next = i + 1 < in.size() ? in[i + 1] : '\0';
        if (in[i] == ' ' && (next == '?' || next == '!' || next == '.' || next == ',')) continue;
        a.push_back(in[i]);
    }
    // 2. A lone apostrophe between spaces loses both spaces: " ' " -> "'".
    std::string b;
    b.reserve(a.size());
    size_t consumed = std::string::npos; // index of a space already eaten by rule 2
    for (size_t i = 0; i < a.size(); ++i) {
        const bool prevSpace = i > 0 && a[i - 1] == ' ' && consumed != i - 1;
        if (i > 0 && a[i] == '\'' && prevSpace && i + 1 < a.size() && a[i + 1] == ' ') {
            b.pop_back();
            b.push_back('\'');
            consumed = ++i;
            continue;
        }
        b.push_back(a[i]);
    }
    // 3. Contractions re-attach: " 's" " 'm" " 're" " 've" lose the space (" 't" " 'd" " 'll"
    //    keep it).
    std::string c;
    c.reserve(b.size());
    for (size_t i = 0; i < b.size(); ++i) {
        if (i > 0 && b[i - 1] == ' ' && b[i] == '\'' && i + 1 < b.size()) {
            const char x1 = b[i + 1];
            const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
            const bool attach = x1 == 's' || x1 == 'm' ||
                                (x1 != 't' && x1 != 'd' && i + 2 < b.size() &&
                                 ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')));
            if (attach) c.pop_back();
        }
        c.push_back(b[i]);
    }
    return c;
}

} // namespace

std::string Tokenizer::tokenPiece(int32_t id, bool renderSpecial) const {
    const detail::Vocab& v = *m_vocab;
    if (!v.valid(id)) return {};
    if (!renderSpecial && hiddenUnlessRendered(v.tokenType[id])) return {};
    return v.piece[id];
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids,
                                      const DecodeOptions& options) const {
    const detail::Vocab& v = *m_vocab;
    for (int32_t id : ids) {
        if (!v.valid(id)) return outOfVocab(id, v.size());
    }
    size_t first = 0;
    size_t last = ids.size();
    const bool mayStrip = v.addSpacePrefix && options.stripLeadingSpace;
    const bool stripAfterBos = mayStrip && options.stripSpaceAfterBos;
    bool stripSpace = mayStrip;
    if (options.removeSpecial && v.addBos && last > 0 && ids[0] == v.bos) {
        first = 1;
        stripSpace = stripAfterBos;
    }
    if (options.removeSpecial && v.addEos && last > first && ids[last - 1] == v.eos) --last;

    std::string out;
    for (size_t i = first; i < last; ++i) {
        const int32_t id = ids[i];
        std::string_view piece;
        if (options.renderSpecial || !hiddenUnlessRendered(v.tokenType[id])) piece = v.piece[id];
        if (stripSpace && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        out.append(piece);
        stripSpace = i == 0 && id == v.bos && stripAfterBos;
    }
    if (options.cleanSpaces && v.pre.cleanSpaces) return cleanSpaces(out);
    return out;
}

StreamDecoder::StreamDecoder(Tokenizer tokenizer, DecodeOptions options)
    : m_tokenizer(std::move(tokenizer)), m_options(options) {
    reset();
}

void StreamDecoder::reset() {
    m_pending.clear();
    m_tokensSeen = 0;
    m_stripNextSpace = m_tokenizer.addSpacePrefix() && m_options.stripLeadingSpace;
}

Result<std::string> StreamDecoder::push(int32_t id) {
    if (id < 0 || id >= m_tokenizer.vocabSize()) return outOfVocab(id, m_tokenizer.vocabSize());
    const bool firstToken = m_tokensSeen++ == 0;
    const bool isBos = id == m_tokenizer.bos();
    const bool stripAfterBos = m_tokenizer.addSpacePrefix() && m_options.stripLeadingSpace &&
                               m_options.stripSpaceAfterBos;
    if (firstToken && isBos && m_options.removeSpecial && m_tokenizer.addBos()) {
        m_stripNextSpace = stripAfterBos;
        return std::string();
    }
    std::string piece = m_tokenizer.tokenPiece(id, m_options.renderSpecial);
    if (m_stripNextSpace && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
    m_stripNextSpace = firstToken && isBos && stripAfterBos;

    m_pending += piece;
    const size_t keep = incompleteUtf8Tail(m_pending);
    std::string out;
    appendSanitizedUtf8(out, std::string_view(m_pending).substr(0, m_pending.size() - keep));
    m_pending.erase(0, m_pending.size() - keep);
    return out;
}

std::string StreamDecoder::finish() {
    std::string out;
    appendSanitizedUtf8(out, m_pending);
    reset();
    return out;
}

} // namespace hearth::tokenizer
