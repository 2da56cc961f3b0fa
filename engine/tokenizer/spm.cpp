// SentencePiece-style merging over a linked list of symbols with a max-heap of candidate
// pairs, so long inputs cost O(n log n).
#include "tokenizer/spm.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <queue>

namespace hearth::tokenizer::detail {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81"; // U+2581

struct Symbol {
    uint32_t start; // byte offset in the escaped text
    uint32_t len;   // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
};

struct Candidate {
    float score;
    int32_t left;
    int32_t right;
    uint32_t len; // joined length when queued; stale if the symbols changed since
};

// Orders the heap: highest score on top, then the leftmost pair.
struct LowerPriority {
    bool operator()(const Candidate& a, const Candidate& b) const {
        if (a.score != b.score) return a.score < b.score;
        return a.left > b.left;
    }
};

class SpmSession {
public:
    SpmSession(const Vocab& vocab, std::string_view text) : m_vocab(vocab), m_text(text) {}

    void run(std::vector<int32_t>& out) {
        split();
        for (size_t i = 1; i < m_symbols.size(); ++i) {
            consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
        }
        while (!m_queue.empty()) {
            const Candidate c = m_queue.top();
            m_queue.pop();
            Symbol& left = m_symbols[c.left];
            Symbol& right = m_symbols[c.right];
            if (left.len == 0 || right.len == 0 || left.len + right.len != c.len) continue;
            left.len += right.len;
            right.len = 0;
            left.next = right.next;
            if (right.next >= 0) m_symbols[right.next].prev = c.left;
            consider(left.prev, c.left);
            consider(c.left, left.next);
        }
        for (int32_t i = m_symbols.empty() ? -1 : 0; i != -1; i = m_symbols[i].next) {
            emit(m_symbols[i], out);
        }
    }

private:
    void split() {
        m_symbols.reserve(m_text.size());
        size_t offset = 0;
        int32_t index = 0;
        while (offset < m_text.size()) {
            const size_t len = std::min(utf8LengthFromLead(static_cast<uint8_t>(m_text[offset])),
                                        m_text.size() - offset);
            const bool last = offset + len == m_text.size();
            m_symbols.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(len),
                                 index - 1, last ? -1 : index + 1});
            offset += len;
            ++index;
        }
    }

    void consider(int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = m_symbols[left];
        const Symbol& r = m_symbols[right];
        const uint32_t len = l.len + r.len;
        const int32_t id = m_vocab.find(m_text.substr(l.start, len));
        if (id == kNoToken) return;
        m_queue.push({m_vocab.score[id], left, right, len});
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
    std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> m_queue;
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
