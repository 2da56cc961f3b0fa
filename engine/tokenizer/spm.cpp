// SentencePiece-style merging over a linked list of symbols with a max-heap of candidate
// pairs, so long inputs cost O(n log n).
#include "tokenizer/spm.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstring>

namespace hearth::tokenizer::detail {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81"; // U+2581

struct Symbol {
    uint32_t start; // byte offset in the escaped text
    uint32_t len;   // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
};

// A candidate pair. `key` orders the heap: the score's bits mapped so that larger scores give
// larger keys, then the left index inverted so the leftmost pair wins ties.
struct Candidate {
    uint64_t key;
    int32_t right;
    uint32_t len; // joined length when queued; stale if the symbols changed since
    int32_t left() const { return static_cast<int32_t>(~static_cast<uint32_t>(key)); }
};

uint64_t candidateKey(float score, int32_t left) {
    uint32_t bits;
    std::memcpy(&bits, &score, sizeof bits);
    // Total order on floats as unsigned integers: negative values reversed below positives.
    bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return (static_cast<uint64_t>(bits) << 32) | ~static_cast<uint32_t>(left);
}

struct LowerPriority {
    bool operator()(const Candidate& a, const Candidate& b) const { return a.key < b.key; }
};

class SpmSession {
public:
    SpmSession(const Vocab& vocab, std::string_view text) : m_vocab(vocab), m_text(text) {}

    void run(std::vector<int32_t>& out) {
        // Symbols whose pair occurs in no token can never end up in one merged symbol, so the
        // text falls apart into independent runs. Merging each run alone, as it is cut from
        // the text, gives the same result as one global queue while the symbols and the queue
        // stay small enough for the cache.
        size_t offset = 0;
        std::string_view previous;
        while (offset < m_text.size()) {
            const size_t len = std::min(utf8LengthFromLead(static_cast<uint8_t>(m_text[offset])),
                                        m_text.size() - offset);
            const std::string_view symbol = m_text.substr(offset, len);
            if (!m_symbols.empty() &&
                m_vocab.spmPairs.find(spmPairKey(previous, symbol)) == nullptr) {
                finishRun(out);
            }
            const auto index = static_cast<int32_t>(m_symbols.size());
            if (index > 0) m_symbols.back().next = index;
            m_symbols.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(len),
                                 index - 1, -1});
            previous = symbol;
            offset += len;
        }
        finishRun(out);
    }

private:
    // Merges the current run until no adjacent pair forms a token (best score first, ties to
    // the leftmost pair), writes its tokens and starts a new run.
    void finishRun(std::vector<int32_t>& out) {
        if (m_symbols.empty()) return;
        m_heap.clear();
        for (size_t i = 1; i < m_symbols.size(); ++i) {
            consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i), false);
        }
        std::make_heap(m_heap.begin(), m_heap.end(), LowerPriority{});
        while (!m_heap.empty()) {
            std::pop_heap(m_heap.begin(), m_heap.end(), LowerPriority{});
            const Candidate c = m_heap.back();
            m_heap.pop_back();
            const int32_t leftIndex = c.left();
            Symbol& left = m_symbols[leftIndex];
            Symbol& right = m_symbols[c.right];
            if (left.len == 0 || right.len == 0 || left.len + right.len != c.len) continue;
            left.len += right.len;
            right.len = 0;
            left.next = right.next;
            if (right.next >= 0) m_symbols[right.next].prev = leftIndex;
            consider(left.prev, leftIndex, true);
            consider(leftIndex, left.next, true);
        }
        for (int32_t i = 0; i != -1; i = m_symbols[i].next) emit(m_symbols[i], out);
        m_symbols.clear();
    }

    void consider(int32_t left, int32_t right, bool keepHeap) {
        if (left < 0 || right < 0) return;
        const Symbol& l = m_symbols[left];
        const Symbol& r = m_symbols[right];
        const uint32_t len = l.len + r.len;
        if (len > m_vocab.maxTokenBytes) return;
        const int32_t id = m_vocab.find(m_text.substr(l.start, len));
        if (id == kNoToken) return;
        m_heap.push_back({candidateKey(m_vocab.score[id], left), right, len});
        if (keepHeap) std::push_heap(m_heap.begin(), m_heap.end(), LowerPriority{});
    }

    void emit(const Symbol& s, std::vector<int32_t>& out) const {
        const std::string_view text = m_text.substr(s.start, s.len);
        if (const int32_t id = m_vocab.find(text); id != kNoToken) {
            out.push_back(id);
            return;
        }
        for (char c : text) {
            const int32_t id = m_vocab.byteToken[static_cast<uint8_t>(c)];
            if (id != kNoToken) {
                out.push_back(id);
            } else if (m_vocab.unk != kNoToken) {
                out.push_back(m_vocab.unk);
            }
        }
    }

    const Vocab& m_vocab;
    std::string_view m_text;
    std::vector<Symbol> m_symbols;
    std::vector<Candidate> m_heap;
};

} // namespace

std::string escapeSpmText(std::string_view text, bool prefixSpace) {
    std::string out;
    out.reserve(text.size() + text.size() / 4 + 3);
    if (prefixSpace) out.append(kSpaceMark);
    for (char c : text) {
        if (c == ' ') {
            out.append(kSpaceMark);
        } else {
            out.push_back(c);
        }
    }
    return out;
}

void encodeSpm(const Vocab& vocab, std::string_view escaped, std::vector<int32_t>& out) {
    if (escaped.empty()) return;
    SpmSession session(vocab, escaped);
    session.run(out);
}

} // namespace hearth::tokenizer::detail
