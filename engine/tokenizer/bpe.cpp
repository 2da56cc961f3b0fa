// BPE: merges run on token ids over a linked list of symbols with a min-heap of
// candidate pairs keyed by merge rank, so a long word costs O(n log n).
#include "tokenizer/bpe.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"

#include <algorithm>

namespace hearth::tokenizer::detail {

namespace {

struct BpeSymbol {
    uint32_t start; // byte offset of its spelling in the word's byte-level text
    uint32_t len;   // 0 once merged into its left neighbour
    int32_t id;     // token of its spelling, kNoToken if none
    int32_t prev;
    int32_t next;
};

struct BpeCandidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t leftId;  // ids when queued; the pair is stale if either symbol changed
    int32_t rightId;
    int32_t result;
};

// Heap order for std::push_heap (a max-heap): the lowest rank, then the leftmost pair, on top.
struct LaterFirst {
    bool operator()(const BpeCandidate& a, const BpeCandidate& b) const {
        if (a.rank != b.rank) return a.rank > b.rank;
        return a.left > b.left;
    }
};

class BpeSession {
public:
    explicit BpeSession(const Vocab& vocab) : m_vocab(vocab) {}

    void encodeWord(std::span<const uint32_t> cps, std::vector<int32_t>& out) {
        // Raw bytes of the word, then (byte-level vocabularies) their byte-level spelling.
        m_bytes.clear();
        for (uint32_t cp : cps) appendUtf8(m_bytes, cp);
        const bool byteLevel = m_vocab.pre.byteLevel;
        if (byteLevel) {
            m_spelled.clear();
            appendByteLevel(m_spelled, m_bytes);
        } else {
            m_spelled = m_bytes;
        }

        if (m_vocab.pre.ignoreMerges ||
            (m_vocab.pre.kind == PreTokenizerKind::Gemma4 && isNewlinesOnly(m_bytes))) {
            if (const int32_t id = m_vocab.find(m_spelled); id != kNoToken) {
                out.push_back(id);
                return;
            }
        }
        if (byteLevel) {
            splitBytes();
        } else {
            splitCharacters(cps);
        }
        if (m_symbols.size() == 1) {
            emitSymbol(m_symbols[0], out);
            return;
        }

        const auto count = static_cast<int32_t>(m_symbols.size());
        m_heap.clear();
        for (int32_t i = 1; i < count; ++i) consider(i - 1, i);
        while (!m_heap.empty()) {
            std::pop_heap(m_heap.begin(), m_heap.end(), LaterFirst{});
            const BpeCandidate c = m_heap.back();
            m_heap.pop_back();
            BpeSymbol& left = m_symbols[c.left];
            BpeSymbol& right = m_symbols[c.right];
            if (left.len == 0 || right.len == 0 || left.id != c.leftId || right.id != c.rightId) {
                continue;
            }
            left.len += right.len;
            left.id = c.result;
            right.len = 0;
            left.next = right.next;
            if (right.next >= 0) m_symbols[right.next].prev = c.left;
            consider(left.prev, c.left);
            consider(c.left, left.next);
        }
        for (int32_t i = 0; i != -1; i = m_symbols[i].next) emitSymbol(m_symbols[i], out);
    }

private:
    static bool isNewlinesOnly(std::string_view bytes) {
        return !bytes.empty() && bytes.find_first_not_of('\n') == std::string_view::npos;
    }

    // One symbol per byte, spelled by its stand-in character.
    void splitBytes() {
        m_symbols.clear();
        uint32_t offset = 0;
        const auto count = static_cast<int32_t>(m_bytes.size());
        for (int32_t i = 0; i < count; ++i) {
            const auto b = static_cast<uint8_t>(m_bytes[i]);
            const auto len = static_cast<uint32_t>(byteToUtf8(b).size());
            const int32_t next = i + 1 < count ? i + 1 : -1;
            m_symbols.push_back({offset, len, m_vocab.byteToken[b], i - 1, next});
            offset += len;
        }
    }

    // One symbol per character of the raw UTF-8 text.
    void splitCharacters(std::span<const uint32_t> cps) {
        m_symbols.clear();
        uint32_t offset = 0;
        const auto count = static_cast<int32_t>(cps.size());
        for (int32_t i = 0; i < count; ++i) {
            const auto len = static_cast<uint32_t>(utf8Length(cps[i]));
            const int32_t next = i + 1 < count ? i + 1 : -1;
            const int32_t id = m_vocab.find(std::string_view(m_spelled).substr(offset, len));
            m_symbols.push_back({offset, len, id, i - 1, next});
            offset += len;
        }
    }

    static size_t utf8Length(uint32_t cp) {
        return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    }

    void consider(int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const int32_t l = m_symbols[left].id;
        const int32_t r = m_symbols[right].id;
        if (l == kNoToken || r == kNoToken) return;
        const MergeEntry* m = m_vocab.merges.find(Vocab::mergeKey(l, r));
        if (m == nullptr) return;
        m_heap.push_back({m->rank, left, right, l, r, m->result});
        std::push_heap(m_heap.begin(), m_heap.end(), LaterFirst{});
    }

    void emitSymbol(const BpeSymbol& s, std::vector<int32_t>& out) const {
        if (s.id != kNoToken) {
            out.push_back(s.id);
            return;
        }
        // Not a token: fall back to single characters of the spelling (byte-level) or to byte
        // tokens (Gemma 4), where they exist.
        for (size_t i = s.start; i < s.start + s.len; ++i) {
            const int32_t id = m_vocab.pre.byteLevel
                                   ? m_vocab.find(std::string_view(&m_spelled[i], 1))
                                   : m_vocab.byteToken[static_cast<uint8_t>(m_spelled[i])];
            if (id != kNoToken) out.push_back(id);
        }
    }

    const Vocab& m_vocab;
    std::string m_bytes;
    std::string m_spelled;
    std::vector<BpeSymbol> m_symbols;
    std::vector<BpeCandidate> m_heap;
};

} // namespace

void encodeBpe(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    if (text.empty()) return;
    std::string escaped;
    if (vocab.pre.escapeSpaces) {
        escaped = escapeSpmText(text, false);
        text = escaped;
    }
    const std::vector<uint32_t> cps = decodeUtf8(text);
    std::vector<uint8_t> info(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) info[i] = codepointInfo(cps[i]);
    std::vector<CodepointRange> words;
    preTokenize(vocab.pre.kind, cps, info, words);

    BpeSession session(vocab);
    for (const CodepointRange& w : words) {
        session.encodeWord(std::span<const uint32_t>(cps).subspan(w.begin, w.end - w.begin), out);
    }
}

} // namespace hearth::tokenizer::detail
